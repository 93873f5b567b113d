"""Zip each cuDNN release that cudnn-rebuild.sh rebuilt (DEST/<version>/, laid out as the installed wheel)
into a wheelhouse, stored rather than compressed: the wheel's files are already checked against PyPI's
sha256, and compressing 0.9 GB a release would take longer than installing it.

usage: python3 wheelhouse.py DEST WHEELHOUSE
"""

import sys
import zipfile
from pathlib import Path

dest, house = Path(sys.argv[1]), Path(sys.argv[2])
house.mkdir(parents=True, exist_ok=True)
for done in sorted(dest.glob("*/.ok")):
    release = done.parent
    infos = sorted(release.glob("nvidia_cudnn_cu*.dist-info"))
    name = infos[0].name.removesuffix(".dist-info")  # nvidia_cudnn_cu13-9.18.1.3
    wheel = house / f"{name}-py3-none-manylinux_2_27_x86_64.whl"
    if wheel.exists():
        continue
    partial = wheel.with_suffix(".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_STORED) as archive:
        for path in sorted(p for p in release.rglob("*") if p.is_file() and p.name != ".ok"):
            archive.write(path, path.relative_to(release).as_posix())
    partial.rename(wheel)
    print(f"{wheel.name}: {wheel.stat().st_size / 1e6:.0f} MB")
