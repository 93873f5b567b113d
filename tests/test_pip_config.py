"""Per-cell environments are built with the user's pip configuration (issue 60, 7): uv reads no
``pip.conf`` and no ``PIP_*`` variable, so what pip would take of them is handed to uv."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from harness.backends import packages, pip_config


def _wheel(folder: Path) -> None:
    """``harnessprobe`` 1.0, a wheel of nothing, in ``folder``."""
    info = "harnessprobe-1.0.dist-info"
    files = {
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: harnessprobe\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        "harnessprobe/__init__.py": "",
    }
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in files) + f"{info}/RECORD,,\n"
    folder.mkdir()
    with zipfile.ZipFile(folder / "harnessprobe-1.0-py3-none-any.whl", "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)


@pytest.fixture
def configured(tmp_path, monkeypatch):
    """A pip configured through PIP_CONFIG_FILE alone: a wheel folder and an index nothing answers."""
    for name in list(os.environ):
        if name.startswith("PIP_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))  # no user pip.conf but this one
    folder = tmp_path / "wheels"
    _wheel(folder)
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nindex-url = http://127.0.0.1:9/simple\nfind-links = {folder}\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    return folder


def test_pip_config_lists_what_pip_install_takes_a_variable_over_install_over_global():
    listing = (
        ":env:.proxy='http://env.example:3128'\n"
        "global.index-url='https://global.example/simple'\n"
        "install.index-url='https://install.example/simple'\n"
        "global.proxy='http://global.example:3128'\n"
        "global.extra-index-url='https://a.example/simple https://b.example/simple'\n"
        "global.trusted-host='a.example'\n"
        "install.no-index='true'\n"
        "global.client-cert='/etc/pki/me.pem'\n"
    )
    found = pip_config.parse(listing)
    assert found.index_url == "https://install.example/simple" and found.proxy == "http://env.example:3128"
    assert found.extra_index_urls == ("https://a.example/simple", "https://b.example/simple")
    assert found.no_index and found.client_cert == "/etc/pki/me.pem"
    args = found.uv_arguments(None)
    assert args[:2] == ["--index-url", "https://install.example/simple"]
    assert "--index-strategy" in args and args[-2:] == ["--allow-insecure-host", "a.example"]
    assert found.uv_arguments("https://cli.example/simple")[:2] == [
        "--index-url",
        "https://cli.example/simple",
    ]
    assert pip_config.parse("") == pip_config.PipSettings() and not pip_config.parse("")


def test_uv_is_given_the_wheel_folder_pip_is_configured_with_and_resolves_from_it_offline(
    configured, tmp_path
):
    found = pip_config.read()
    assert found.find_links == (str(configured),) and found.index_url == "http://127.0.0.1:9/simple"
    if packages.uv() is None:
        pytest.skip("no uv here: pip installs, and reads its own configuration")
    command, _ = packages.install_command(
        ["harnessprobe==1.0"], packages.PackageSource(), sys.executable, tmp_path / "t"
    )
    assert ["--find-links", str(configured)] == command[command.index("--find-links") :][:2]
    assert command[command.index("--index-url") :][:2] == ["--index-url", "http://127.0.0.1:9/simple"]
    # uv itself, offline: the package is found in the configured folder and nowhere else
    dry = subprocess.run(
        [*command[:3], "--dry-run", "--offline", *command[3:]], capture_output=True, text=True
    )
    assert dry.returncode == 0 and "+ harnessprobe==1.0" in dry.stdout + dry.stderr, dry.stderr
    without = [word for word in command if word not in ("--find-links", str(configured))]
    missed = subprocess.run(
        [*without[:3], "--dry-run", "--offline", *without[3:]], capture_output=True, text=True
    )
    assert missed.returncode != 0  # the folder is what found it
    # the command line's index replaces pip's; a wheelhouse is the only source, whatever pip says
    given, _ = packages.install_command(["x"], packages.PackageSource("https://cli.example/simple"), "py")
    assert "https://cli.example/simple" in given and "http://127.0.0.1:9/simple" not in given
    offline, _ = packages.install_command(["x"], packages.PackageSource(wheelhouse=tmp_path), "py")
    assert str(configured) not in offline and "--no-index" in offline
    # an environment built with this configuration is not the one built without it
    assert "pip_config" in packages.PackageSource().key()
