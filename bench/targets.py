"""Issue 20's targets for secretd, read by report.py (every make bench report) and by
cpu-split.sh: the one place they are written."""

# Each phase's median at most this multiple of its floor.
FLOOR_TARGETS = {"store": 1.5, "lookup": 1.3, "delete": 1.5}
# secretd's own CPU per call, ms.
CPU_TARGETS = {"store": 0.12, "lookup": 0.05}
# 8 concurrent storing clients: at least this multiple of one client's stores per second.
CONCURRENCY_TARGET = 3.0
