"""Static checks of the service image (deploy/docker/), runnable without a Docker engine.

The Dockerfile is parsed into stages and checked for what would make the image
wrong in production: root user, compilers or dev dependencies in the final
stage, an entrypoint other than `tavla`, a build context that ships .venv or
generated code. The parts of the build that can run here do run: the protobuf
generation script, and a wheel build with the image's packaging recipe whose
contents are compared with the source tree (a data file missing from the wheel
is a file missing from the image); that wheel plus the generated code, laid out
as in the image's site-packages and without the source tree on the path, must
run `tavla` and migrate every service's database on a real PostgreSQL.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from google.protobuf import descriptor_pb2

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "deploy" / "docker"
DOCKERFILE = DOCKER / "Dockerfile"
DOCKERIGNORE = DOCKER / "Dockerfile.dockerignore"
GEN_PROTOS = DOCKER / "gen-protos.sh"
CHART_VALUES = ROOT / "charts" / "tavla" / "values.yaml"
SERVICES = (
    "accounts", "game", "matchmaking", "wallet", "analysis", "antiabuse", "geo", "tournaments"
)

BUILD_TOOLS = ("gcc", "g++", "clang", "make", "build-essential", "libc6-dev", "python3-dev")


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def args(self, keyword: str) -> list[str]:
        return [rest for kw, rest in self.instructions if kw == keyword]


def parse_dockerfile(text: str) -> tuple[dict[str, str], list[Stage]]:
    """Global ARG defaults and stages; continuation lines joined, comments dropped."""
    logical: list[str] = []
    buffer = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not buffer and (not line or line.startswith("#")):
            continue
        if buffer and line.startswith("#"):
            continue
        if line.endswith("\\"):
            buffer += line[:-1] + " "
            continue
        logical.append(buffer + line)
        buffer = ""
    assert not buffer, "Dockerfile ends inside a continued line"

    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in logical:
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        rest = rest.strip()
        if keyword == "FROM":
            parts = rest.split()
            name = parts[2] if len(parts) >= 3 and parts[1].upper() == "AS" else None
            stages.append(Stage(base=parts[0], name=name))
        elif not stages:
            assert keyword == "ARG", f"only ARG may precede the first FROM, got {line!r}"
            key, _, default = rest.partition("=")
            global_args[key] = default
        else:
            stages[-1].instructions.append((keyword, rest))
    return global_args, stages


@pytest.fixture(scope="module")
def dockerfile() -> tuple[dict[str, str], list[Stage]]:
    return parse_dockerfile(DOCKERFILE.read_text())


def test_multi_stage_on_the_same_slim_python_base(dockerfile):
    global_args, stages = dockerfile
    assert len(stages) >= 2, "expected a build stage and a runtime stage"
    build, final = stages[0], stages[-1]
    assert build.base == final.base, (
        "the runtime stage must use the build stage's base: the virtualenv's "
        f"interpreter comes from it ({build.base} vs {final.base})"
    )
    base = final.base
    match = re.fullmatch(r"\$\{?(\w+)\}?", base)
    if match:
        base = global_args[match.group(1)]
    assert re.match(r"python:3\.11-slim", base), f"base image {base!r} is not python:3.11-slim"


def test_final_stage_runs_as_numeric_non_root_user(dockerfile):
    _, stages = dockerfile
    users = stages[-1].args("USER")
    assert users, "the final stage sets no USER: the services would run as root"
    uid, _, gid = users[-1].partition(":")
    # Numeric, so that Kubernetes' runAsNonRoot can verify it without /etc/passwd.
    assert uid.isdigit() and int(uid) != 0, f"USER {users[-1]!r} is not a numeric non-root uid"
    assert not gid or (gid.isdigit() and int(gid) != 0)
    chart = yaml.safe_load(CHART_VALUES.read_text())
    assert int(uid) == chart["podSecurityContext"]["runAsUser"], (
        "the chart's podSecurityContext.runAsUser differs from the image's USER"
    )


def test_final_stage_has_no_build_tools_sources_or_pip_installs(dockerfile):
    _, stages = dockerfile
    final = stages[-1]
    for command in final.args("RUN"):
        for tool in BUILD_TOOLS:
            assert not re.search(rf"(^|[\s/]){re.escape(tool)}(\s|$)", command), (
                f"the final stage installs or runs {tool}: {command!r}"
            )
        assert "apt-get install" not in command, f"the final stage installs packages: {command!r}"
        assert "pip " not in command and "pip3 " not in command, (
            f"the final stage runs pip: {command!r}"
        )
    for copy in final.args("COPY") + final.args("ADD"):
        assert copy.startswith("--from="), (
            f"the final stage copies from the build context ({copy!r}); "
            "only built artefacts from the build stage belong there"
        )


def test_entrypoint_is_tavla(dockerfile):
    _, stages = dockerfile
    entrypoints = stages[-1].args("ENTRYPOINT")
    assert entrypoints, "no ENTRYPOINT in the final stage"
    assert json.loads(entrypoints[-1]) == ["tavla"], 'ENTRYPOINT must be the exec form ["tavla"]'
    env = " ".join(stages[-1].args("ENV"))
    assert "PATH=/opt/tavla/venv/bin" in env, "the virtualenv's bin must be on PATH for `tavla`"


def test_build_installs_pinned_non_editable_without_dev_extras(dockerfile):
    _, stages = dockerfile
    installs = [
        command
        for stage in stages[:-1]
        for command in stage.args("RUN")
        if "pip install" in command
    ]
    project_installs = [c for c in installs if re.search(r"pip install[^&]* \.(\s|$)", c)]
    assert project_installs, "no `pip install ... .` of the project in the build stage"
    for command in installs:
        assert "-c constraints.txt" in command or "--upgrade pip==" in command, (
            f"unpinned install: {command!r}"
        )
        assert "[dev]" not in command, f"dev dependencies in the image: {command!r}"
        assert not re.search(r"pip install[^&]*(\s-e\s|--editable)", command), (
            f"editable install in the image: {command!r}"
        )


def test_proto_generation_uses_the_makefile_flags_minus_mypy():
    makefile = (ROOT / "Makefile").read_text()
    # The protoc command alone: from its name to its list of protos.
    recipe = makefile.split("grpc_tools.protoc", 1)[1].split("$(PROTOS)\n", 1)[0]
    flags = {
        flag
        for flag in re.findall(r"(--[a-z_]+)", recipe)
        if "mypy" not in flag and flag != "--plugin"
    }
    assert flags >= {"--python_out", "--grpc_python_out", "--descriptor_set_out"}
    script = "\n".join(
        line for line in GEN_PROTOS.read_text().splitlines() if not line.lstrip().startswith("#")
    )
    for flag in flags:
        assert flag in script, f"gen-protos.sh lacks the Makefile's protoc flag {flag}"
    assert "mypy" not in script, "the image needs no mypy stubs"


def _dockerignore_excludes(patterns: list[str], path: str) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parents wins."""

    def regex(pattern: str) -> re.Pattern[str]:
        out = ""
        i = 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                out += "(?:.*/)?"
                i += 3
            elif pattern.startswith("**", i):
                out += ".*"
                i += 2
            elif pattern[i] == "*":
                out += "[^/]*"
                i += 1
            elif pattern[i] == "?":
                out += "[^/]"
                i += 1
            elif pattern[i] == "[":
                end = pattern.index("]", i)
                out += pattern[i : end + 1]
                i = end + 1
            else:
                out += re.escape(pattern[i])
                i += 1
        return re.compile(out + r"\Z")

    parts = path.split("/")
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    excluded = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        body = pattern[1:] if negate else pattern
        body = body.strip("/")
        compiled = regex(body)
        if any(compiled.match(candidate) for candidate in candidates):
            excluded = not negate
    return excluded


def test_build_context_excludes_local_state_and_keeps_sources():
    patterns = [
        line.strip()
        for line in DOCKERIGNORE.read_text().splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    for path in (
        ".venv/bin/python",
        "gen/tavla.pb",
        "gen/tavla/accounts/v1/accounts_pb2.py",
        ".git/HEAD",
        ".tavla/dev/postgres/PG_VERSION",
        "services/backgammon/_fastmoves.cpython-311-x86_64-linux-gnu.so",
        "services/kit/__pycache__/cli.cpython-311.pyc",
        "tests/unit/test_anything.py",
        "charts/tavla/values.yaml",
        "tavla.egg-info/PKG-INFO",
    ):
        assert _dockerignore_excludes(patterns, path), f"the build context would include {path}"
    for path in (
        "pyproject.toml",
        "constraints.txt",
        "setup.py",
        "README.md",
        "services/cli.py",
        "services/backgammon/_fastmoves.c",
        "services/wallet/domain/schedules/gammonempire-2026-11.toml",
        "protos/tavla/accounts/v1/accounts.proto",
        "deploy/docker/gen-protos.sh",
        "deploy/docker/MANIFEST.in",
        "web/js/api.js",
    ):
        assert not _dockerignore_excludes(patterns, path), f"the build context would lack {path}"


def test_gen_protos_script_builds_the_package_and_the_gateway_descriptor(tmp_path):
    out = tmp_path / "gen"
    subprocess.run(
        ["sh", str(GEN_PROTOS), str(out)],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable},
        check=True,
        timeout=60,
    )
    assert (out / "tavla" / "__init__.py").is_file()
    assert list(out.glob("tavla/accounts/v1/*_pb2_grpc.py")), "no gRPC stubs generated"
    assert not list(out.rglob("*.pyi")), "mypy stubs are not needed in the image"
    files = descriptor_pb2.FileDescriptorSet.FromString((out / "tavla.pb").read_bytes()).file
    names = {f.name for f in files}
    assert "google/api/annotations.proto" in names, "descriptor set lacks its imports"
    # The gateway's init container reads who may call what from the access option.
    assert "tavla/common/v1/auth.proto" in names, "descriptor set lacks the access option"
    areas = {f.package.split(".")[1] for f in files if f.service and f.package.startswith("tavla.")}
    chart = yaml.safe_load(CHART_VALUES.read_text())
    assert set(chart["services"]) <= areas, (
        f"chart services without an API in the descriptor set: {set(chart['services']) - areas}"
    )


@pytest.fixture(scope="module")
def image_wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The project wheel built as the Dockerfile builds it, and the source copy it came from."""
    work = tmp_path_factory.mktemp("image")
    src = work / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so")
    shutil.copytree(ROOT / "services", src / "services", ignore=ignore)
    for name in ("pyproject.toml", "setup.py", "constraints.txt", "README.md", "MANIFEST.in"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, src / name)
    with (src / "MANIFEST.in").open("a") as manifest:
        manifest.write((DOCKER / "MANIFEST.in").read_text())
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(work / "dist"),
            str(src),
        ],
        timeout=180,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (wheel,) = (work / "dist").glob("tavla-*.whl")
    return wheel, src


def test_image_install_recipe_ships_every_runtime_file(image_wheel):
    wheel, src = image_wheel
    shipped = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(
        str(path.relative_to(src))
        for path in (src / "services").rglob("*")
        # Markdown beside the code is for its readers, not for the running service.
        if path.is_file() and path.suffix != ".md" and str(path.relative_to(src)) not in shipped
    )
    assert not missing, f"the image's install would not ship: {missing}"
    assert any(name.endswith(".so") for name in shipped), "the C extension was not built"
    entry_points = next(n for n in shipped if n.endswith(".dist-info/entry_points.txt"))
    assert "tavla = services.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


IMAGE_PYTHON = """
import os, sys
target, site = sys.argv[1], sys.argv[2]
# The image's site-packages: the installed wheel and generated code, then the
# third-party dependencies. No .pth processing: no editable finder, no gen/ path.
sys.path[:0] = [target]
sys.path.append(site)
import services, tavla
for module in (services, tavla):
    assert module.__file__.startswith(target), module.__file__
from services.cli import main
sys.exit(main(sys.argv[3:]))
"""


@pytest.fixture(scope="module")
def image_site(image_wheel, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site-packages laid out as in the image: wheel installed, generated code copied in."""
    wheel, _ = image_wheel
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-compile",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        timeout=120,
        capture_output=True,
    )
    gen = tmp_path_factory.mktemp("gen")
    subprocess.run(
        ["sh", str(GEN_PROTOS), str(gen)],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable},
        check=True,
        timeout=60,
        capture_output=True,
    )
    shutil.copytree(gen / "tavla", target / "tavla")
    return target


def run_as_in_image(
    site: Path, *argv: str, env: dict[str, str] | None = None, script: str = IMAGE_PYTHON
):
    import sysconfig

    return subprocess.run(
        [
            sys.executable,
            "-S",
            "-c",
            script,
            str(site),
            sysconfig.get_paths()["purelib"],
            *argv,
        ],
        cwd=site.parent,
        env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1", **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_installed_image_layout_runs_the_tavla_command(image_site):
    result = run_as_in_image(image_site, "--help")
    assert result.returncode == 0, result.stderr[-3000:]
    for command in ("serve", "migrate"):
        assert command in result.stdout
    result = run_as_in_image(image_site, "serve", "--help")
    assert result.returncode == 0, result.stderr[-3000:]
    for service in SERVICES:
        assert service in result.stdout, f"`tavla serve` does not offer {service}"


def test_installed_image_layout_renders_the_gateway_config(image_site, tmp_path):
    """What the chart's gateway init container runs, on the image's own descriptor set."""
    settings = {"upstreams": {"accounts": {"host": "accounts", "port": 50051, "dns": True}},
                "jwks_file": "/etc/tavla/jwks/jwks.json",
                "descriptor_file": "/etc/tavla/descriptors/tavla.pb"}
    (tmp_path / "settings.json").write_text(json.dumps(settings))
    # The descriptor set as the image build makes it (/opt/tavla/tavla.pb in the image).
    subprocess.run(["sh", str(GEN_PROTOS), str(tmp_path / "gen")], cwd=ROOT, check=True,
                   env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable}, timeout=60,
                   capture_output=True)
    result = run_as_in_image(
        image_site, "gateway", "config", "--settings", str(tmp_path / "settings.json"),
        "--descriptor", str(tmp_path / "gen" / "tavla.pb"),
        "--out", str(tmp_path / "envoy.json"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    config = json.loads((tmp_path / "envoy.json").read_text())
    assert [c["name"] for c in config["static_resources"]["clusters"]] == ["unrouted", "accounts"]


def test_installed_image_layout_migrates_every_service_database(image_site, postgres_server):
    # One interpreter runs `tavla migrate <service>` for each service in turn (seven
    # interpreter starts would cost seconds); each gets its own database, as in production.
    urls = {}
    for service in SERVICES:
        if (ROOT / "services" / service / "migrations").is_dir():
            database = f"image_migrate_{service}"
            postgres_server.create_database(database)
            urls[service] = postgres_server.url(database)
    script = IMAGE_PYTHON.replace(
        "sys.exit(main(sys.argv[3:]))",
        "import json\n"
        "for service, url in json.loads(sys.argv[3]).items():\n"
        "    os.environ['TAVLA_DATABASE_URL'] = url\n"
        "    assert main(['migrate', service]) == 0, service\n",
    )
    result = run_as_in_image(image_site, json.dumps(urls), script=script)
    assert result.returncode == 0, f"tavla migrate:\n{result.stderr[-3000:]}"
    for service, url in urls.items():
        database = url.rsplit("/", 1)[1]
        revision = postgres_server.psql("SELECT version_num FROM alembic_version", database)
        assert revision.strip(), f"{service}: no Alembic revision recorded"
