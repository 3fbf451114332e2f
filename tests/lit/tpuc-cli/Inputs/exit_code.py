"""exit_code.py N COMMAND [ARGS...]: runs COMMAND, passes its output on, and
exits 0 when it exited with status N, else 1 (lit's `not` accepts any
failure; the tools promise exactly 1 for bad input)."""
import subprocess
import sys

if len(sys.argv) < 3:
    sys.exit("usage: exit_code.py N COMMAND [ARGS...]")
want = int(sys.argv[1])
proc = subprocess.run(sys.argv[2:])
if proc.returncode != want:
    sys.stderr.write("exit_code.py: %s exited %d, expected %d\n" %
                     (sys.argv[2], proc.returncode, want))
    sys.exit(1)
