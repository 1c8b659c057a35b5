"""A UI stuck for good, for test_exit_guard.py: it starts a stand-in for `cascade serve` in its own
session (with a child of its own, like rclone), has the exit guard protect it, prints both pids,
then blocks its main thread on a lock. `python stuck_ui.py tty|plain`."""

import signal
import subprocess
import sys
import threading

from cascade_tui.exit_guard import ExitGuard

# A stand-in for `cascade serve` in its own session, with a child of its own (like rclone).
server = subprocess.Popen(
    [
        sys.executable,
        "-c",
        "import subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', "
        "'import time; time.sleep(600)']); print(c.pid, flush=True); time.sleep(600)",
    ],
    start_new_session=True,
    stdout=subprocess.PIPE,
    text=True,
)
assert server.stdout is not None
grandchild = server.stdout.readline().strip()
guard = ExitGuard.for_this_terminal() if sys.argv[1] == "tty" else ExitGuard()
guard.grace_s, guard.cleanup_s, guard.kill_grace_s, guard.poll_s = 0.5, 1.0, 2.0, 0.1
guard.protect(server.pid)
guard.start()
# The guard asks the main thread to exit (a SystemExit raised there). A stuck UI never acts on
# it; but between the line below and `lock.acquire()` this thread still runs Python, and on a
# loaded machine the request can land there: the script would then exit without the guard
# killing anything. So the request is ignored from here on, wherever it lands.
for signum in (signal.SIGHUP, signal.SIGTERM):
    signal.signal(signum, lambda *_: None)
print(server.pid, grandchild, flush=True)
lock = threading.Lock()
lock.acquire()
lock.acquire()  # stuck for ever, holding a lock, like the UI blocked on a full queue
