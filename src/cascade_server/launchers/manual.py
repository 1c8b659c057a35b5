"""`CASCADE_LAUNCHER=manual`: bring your own simulator.

Each sim moves to `launching` and waits for a simulator the user starts with the sim's id
(`cascade worker --sim-id ... --url ...`, or any client of the simulator endpoints).
"""

from __future__ import annotations

from .base import Launcher, SimSpec


class ManualLauncher(Launcher):
    name = "manual"
    submits_at_once = True  # submit only marks the sims `launching`

    async def submit(self, sims: list[SimSpec]) -> None:
        for sim in sims:
            await self.events.launching(sim.sim_id, None)

    async def resume(self, pending: list[SimSpec], active: list[tuple[SimSpec, str | None]]) -> None:
        await self.submit(pending)

    async def cancel(self, sim_id: str, launcher_ref: str | None) -> None:
        # Nothing of ours runs the sim; its next heartbeat gets `cancel: true`.
        return None
