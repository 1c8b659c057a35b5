"""What screens and panes need from the app, handed to them when they are made: the API client,
the settings and the clock (tests pass a fixed one). Screens never reach into the app for these;
they post messages (`messages.py`) for what the app does."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from .connection.client import CascadeClient
from .connection.config import TuiSettings


@dataclass(frozen=True)
class Services:
    client: CascadeClient
    settings: TuiSettings
    now: Callable[[], datetime]
