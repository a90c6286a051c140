"""Small openb-format traces written to a directory (the real one is in data/alibaba-gpu-v2023)."""

from __future__ import annotations

from pathlib import Path

NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model"
POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"


def write_nodes(path: Path, rows: list[tuple]) -> Path:
    path.write_text("\n".join([NODE_HEADER, *(",".join(str(v) for v in row) for row in rows)]) + "\n")
    return path


def write_pods(path: Path, rows: list[tuple]) -> Path:
    """Rows ``(name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec)``."""
    lines = [POD_HEADER]
    lines += [",".join(str(v) for v in row) + ",LS,Running,0,100,0" for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def small_trace(tmp_path: Path) -> tuple[Path, Path]:
    """Four GPU nodes (2 x 2 T4, 1 x 4 V100M16, 1 x 8 G2) and 40 pods of the
    trace's usual shapes: whole GPUs, shares, CPU-only, one 2-GPU pod, one pinned to V100M16."""
    nodes = write_nodes(tmp_path / "nodes.csv", [
        ("node-t4-a", 32000, 131072, 2, "T4"), ("node-t4-b", 32000, 131072, 2, "T4"),
        ("node-v100", 64000, 262144, 4, "V100M16"), ("node-g2", 96000, 393216, 8, "G2"),
    ])
    shapes = [(8000, 16384, 1, 1000, ""), (4000, 8192, 1, 500, ""), (2000, 4096, 1, 250, ""),
              (6000, 12288, 0, 0, ""), (4000, 8192, 1, 460, "")]
    rows = [(f"pod-{i:03d}", *shapes[i % len(shapes)]) for i in range(38)]
    rows.append(("pod-two", 16000, 32768, 2, 1000, ""))
    rows.append(("pod-v100", 8000, 16384, 1, 1000, "V100M16|V100M32"))
    pods = write_pods(tmp_path / "pods.csv", rows)
    return nodes, pods
