"""The machine a benchmark ran on, as the benchmarks print it next to their
figures: the CPU model (from /proc/cpuinfo where there is one) and the core
count."""
import os
import platform


def describe():
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{name}, {os.cpu_count()} cores"
