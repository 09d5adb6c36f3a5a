"""The docs run themselves: every shell command in ``README.md`` and ``docs/*.md`` works as written.

Each fenced shell block is run in a fresh temporary working directory, as a user pasting it would, with the
``keyshared`` and ``pytest`` of this environment first on ``PATH``, against the model and pulsar-lite:

* ``$ `` prompts: the command runs; the output shown under it must match the real output line by line
  (stdout, or stderr when the command prints nothing else; progress lines on stderr are timing and are not
  compared).  ``...`` inside a line stands for any text, a line of only ``...`` for any number of lines.
  The exit code is the one the docs show (``$ echo $?``, ``; echo $?`` or ``(exit code N)``), else 0.
* plain command lines run and must exit 0 (the synopsis lines of the commands table first have their
  placeholders filled in: ``[--target T]`` becomes ``--target model`` and so on, see :data:`OPTION_VALUES`).
* what cannot run here is recognised and skipped or checked more cheaply, each with its reason
  (:func:`plan`): a command that needs Docker, one that creates a virtual environment, one that runs the
  whole suite (collected instead of run: that proves the plugin loads and takes every option).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conformance.checks import check_trace
from conformance.trace.builder import TraceBuilder

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_LANGS = {"", "sh", "bash", "shell", "console"}
PROGRAMS = {"keyshared", "pytest", "python", "python3", "pip", "for", ".venv/bin/python", ".venv/bin/pip"}
_BOUND_S = 180

#: Values for the placeholders of a synopsis line, by the option they follow.
OPTION_VALUES = {
    "--target": "model",
    "-t": "model",
    "--scenario": "join-while-pending",
    "--seed": "1",
    "--runs": "1",
    "--out": "synopsis-out",
    "--profile": "pip379",
    "--pulsar-version": "4.0",
    "--points": "3",
    "--consumers": "c1,c2",
    "-o": "implementation=pip379",
}
#: Values a subcommand's placeholders take instead (``keyshared soak --consumers`` counts consumers).
COMMAND_OPTION_VALUES = {
    "soak": {
        "--duration": "5s",
        "--messages": "200",
        "--rate": "200",
        "--producers": "2",
        "--consumers": "2",
        "--keys": "20",
        "--churn": "30",
        "--faults": "restart",  # the model owns its broker: it restarts; it has no connections to cut
        "--drain-timeout": "10s",
    },
    "convert": {"--buckets": "4"},
}
#: Values for positional placeholders.
POSITIONAL_VALUES = {
    "TRACE": ["trace.jsonl"],
    "SCENARIO": ["join-while-pending"],
    "CONSUMER...": ["c1", "c2"],
    "KEY...": ["key-0", "key-1"],
}
#: Files a command takes for granted, with what stands in for them here (and why it may).
GIVEN = {
    # "a failing case saved its scenario there": any scenario file the suite writes is one of the built-ins
    "keyshared-artifacts/latest/builtin--join-while-pending/run-1/scenario.toml": ROOT
    / "conformance/scenarios/builtin/join-while-pending.toml",
}
_ENV_ASSIGNMENTS = re.compile(r"^\s*(?:[A-Z_][A-Z0-9_]*=\S*\s+)*")
#: A line that looks like a command, in a block that is not read as commands (the block would go unchecked).
_COMMAND_LIKE = re.compile(
    r"^(?:\$ )?(?:[A-Z_][A-Z0-9_]*=\S*\s+)*"
    r"(?:keyshared|pytest|python3?|pip|uv|cd|export|bash|sh|docker|git|apt-get|spark-submit|\.ci/run|\.venv/bin/\S+)"
    r"(?:\s|$)"
)
_PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*(?:[,.|=][A-Z0-9_.,|=]*)?$")


@dataclass
class Command:
    text: str
    line: int
    output: list[str] | None = None
    code: int = 0
    synopsis: bool = False


@dataclass
class Block:
    source: str
    commands: list[Command] = field(default_factory=list)

    def uses_pulsar_lite(self) -> bool:
        return any(
            re.match(r"keyshared (run|replay)\b", c.text) and ("--target" not in c.text or "pulsar-lite" in c.text)
            for c in self.commands
        )


# --- extraction ----------------------------------------------------------------------------------------------


def extract(path: Path) -> list[Block]:
    """The shell blocks of a Markdown file that hold commands (trees and sample output are not commands)."""
    return extract_text(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))


def extract_text(text: str, name: str) -> list[Block]:
    """:func:`extract` on Markdown ``text`` from file ``name``."""
    blocks = []
    for match in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.M | re.S):
        if match.group(1) not in SHELL_LANGS:
            continue
        first_line = text[: match.start()].count("\n") + 2
        lines = match.group(2).splitlines()
        if any(line.startswith("$ ") for line in lines):
            commands = _prompted(lines, first_line)
        else:
            commands = _plain(lines, first_line)
        if commands:
            blocks.append(Block(f"{name}:{first_line - 1}", commands))
    return blocks


def _prompted(lines: list[str], first_line: int) -> list[Command]:
    commands: list[Command] = []
    for offset, line in enumerate(lines):
        if line.startswith("$ "):
            text = line[2:].strip()
            if text != "echo $?":  # its output, the code, joins the output of the command before it
                commands.append(Command(text, first_line + offset, output=[]))
        elif commands and commands[-1].output is not None:
            commands[-1].output.append(line.rstrip())
    # "$ echo $?" and "; echo $?": the number printed is the previous command's exit code
    result: list[Command] = []
    for command in commands:
        while command.output and not command.output[-1].strip():  # the blank line between two examples
            command.output.pop()
        if command.text.endswith("; echo $?"):
            command.text = command.text[: -len("; echo $?")].strip()
            assert command.output and command.output[-1].strip().isdigit(), command
            command.code = int(command.output.pop())
        elif command.output and command.output[-1].startswith("(exit code "):
            command.code = int(command.output.pop()[len("(exit code ") : -1])
        result.append(command)
    # after "$ echo $?" the number printed was folded into the output of the command before it
    for index, line in enumerate(lines):
        if line.strip() == "$ echo $?":
            owner = max((c for c in result if c.line < first_line + index), key=lambda c: c.line)
            assert owner.output and owner.output[-1].strip().isdigit(), owner
            owner.code = int(owner.output.pop())
    return result


def _plain(lines: list[str], first_line: int) -> list[Command]:
    logical: list[tuple[int, str]] = []
    pending = ""
    start = 0
    for offset, line in enumerate(lines):
        if not pending:
            start = first_line + offset
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        if not pending and line[:1].isspace() and logical:  # a synopsis wrapped onto an indented line
            logical[-1] = (logical[-1][0], f"{logical[-1][1]} {line.strip()}")
            continue
        logical.append((start, pending + line))
        pending = ""
    logical = [(n, text) for n, text in logical if not text.lstrip().startswith("#")]  # comment lines
    if not logical or _program(logical[0][1]) not in PROGRAMS:
        return []  # not commands: a directory tree, sample output
    if logical[0][1].startswith("for "):  # a shell loop is one command
        return [Command("\n".join(lines), first_line)]
    commands = []
    for line_no, text in logical:
        text = re.sub(r"\s+#\s.*$", "", text).strip()
        if text:
            synopsis = text.startswith("keyshared") and ("[" in text or any(map(_is_placeholder, text.split())))
            commands.append(Command(text, line_no, synopsis=synopsis))
    return commands


def _program(line: str) -> str:
    """The program a shell line runs (``KEYSHARED_PURE=1 keyshared check t`` runs ``keyshared``)."""
    words = _ENV_ASSIGNMENTS.sub("", line).split(maxsplit=1)
    return words[0] if words else ""


def _is_placeholder(token: str) -> bool:
    return bool(_PLACEHOLDER.match(token)) or token == "..."


def fill_synopsis(text: str) -> str:
    """A runnable command from a synopsis line: every optional part taken, placeholders given values."""
    while True:
        inner = re.search(r"\[([^\[\]]*)\]", text)
        if inner is None:
            break
        content = inner.group(1).split(" | ")[0]
        if not content.startswith("-") and not _is_placeholder(content.split()[0]):
            content = ""  # prose such as "[same options]"
        text = text[: inner.start()] + content + text[inner.end() :]
    words: list[str] = []
    head = text.split()
    values = {**OPTION_VALUES, **COMMAND_OPTION_VALUES.get(head[1] if len(head) > 1 else "", {})}
    for token in text.split():
        if token == "...":
            continue
        previous = words[-1] if words else ""
        if previous in values and (_is_placeholder(token) or "|" in token):
            words.append(values[previous])
        elif token in POSITIONAL_VALUES:
            words.extend(POSITIONAL_VALUES[token])
        elif "|" in token:
            words.append(token.split("|")[0])
        else:
            words.append(token)
    return " ".join(words)


# --- what runs, and how ----------------------------------------------------------------------------------------


@dataclass
class Step:
    command: Command
    run: str | None  #: the shell text to run, None to skip
    reason: str = ""  #: why it is skipped or changed
    compare: bool = True  #: whether the shown output is compared


def plan(command: Command) -> list[Step]:
    """How a documented command is checked here: as written, more cheaply, or skipped with the reason."""
    text = command.text
    if command.synopsis:
        return [Step(command, fill_synopsis(text), "synopsis: placeholders filled in")]
    if text.startswith("for ") and "--pyargs conformance" in text:
        # The loop runs as written, each pass collecting the suite: that proves the loop's shell, the plugin
        # and every option it passes, without running the whole suite once per seed.
        cheap = text.replace("--pyargs conformance", "--pyargs conformance --collect-only -p no:cacheprovider")
        reason = "runs the whole conformance suite once per seed: each pass collects it instead"
        return [Step(command, cheap, reason, False)]
    if "testcontainers" in text:
        return [Step(command, None, "needs a Docker engine (Apache Pulsar in a container)")]
    steps: list[Step] = []
    parts = [p.strip() for p in text.split("&&")]
    for part in parts:
        if part.startswith("python3 -m venv") or re.search(r"(^|[\s/])pip install ", part):
            reason = "creates a virtual environment and installs the package; .ci/run does exactly this"
            steps.append(Step(command, None, reason))
            continue
        part = re.sub(r"^(KEYSHARED_\w+=\S+ )*\.venv/bin/", "", part)
        if re.fullmatch(r"python -m pytest( -q)?", part):
            steps.append(Step(command, None, "runs the project's whole test suite: that is the CI job itself"))
        elif bench := re.match(r"python (benchmarks/\w+\.py)", part):
            reason = "a benchmark prints figures for minutes from a checkout: its script is run with --help"
            steps.append(Step(command, f"python {ROOT / bench.group(1)} --help", reason, False))
        elif baseline := re.search(r"--keyshared-baseline=(\S+)", part):
            # The results file comes from a full run against another broker (the line before, collected here):
            # one real case on the model writes a real one, and collecting the command reads and checks it.
            reason = "compares with a full run's results file: one model case writes it, the command is collected"
            results = (
                "pytest -p pytest_keyshared --pyargs conformance --keyshared-target=model -k steady -q"
                f" -p no:cacheprovider --keyshared-results={baseline.group(1)} >/dev/null"
            )
            steps.append(Step(command, f"{results} && {part} --collect-only -q -p no:cacheprovider", reason, False))
        elif re.match(r"(python -m )?pytest .*--pyargs conformance", part):
            reason = "the whole suite takes minutes: collecting it proves the plugin loads and takes every option"
            steps.append(Step(command, f"{part} --collect-only -q -p no:cacheprovider", reason))
        elif (programs := re.search(r"--programs (\d+)", part)) and int(programs.group(1)) > 3:
            cheap = part.replace(programs.group(0), "--programs 2")
            reason = "a sweep of thousands of generated programs is the nightly run: two per target take its path"
            steps.append(Step(command, cheap, reason, False))
        elif (runs := re.search(r"--runs (\d+)", part)) and int(runs.group(1)) > 3 and "--target model" not in part:
            cheap = part.replace(runs.group(0), "--runs 2")
            steps.append(Step(command, cheap, "two runs take the path more runs do, in less time", False))
        else:
            steps.append(Step(command, part))
    return steps


def matches(shown: list[str], real: list[str]) -> bool:
    """Whether the real lines are what the docs show (``...`` in a line: any text; a ``...`` line: any lines)."""
    if not shown:
        return not real
    head, rest = shown[0], shown[1:]
    if head.strip() == "...":
        return any(matches(rest, real[k:]) for k in range(len(real) + 1))
    if not real:
        return False
    pattern = ".*".join(re.escape(piece) for piece in head.rstrip().split("..."))
    return re.fullmatch(pattern, real[0].rstrip()) is not None and matches(rest, real[1:])


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("KEYSHARED_TARGET", None)
    env.pop("PYTEST_ADDOPTS", None)
    return env


def _prepare(cwd: Path) -> None:
    b = TraceBuilder()
    b.open("c1")
    b.publish("k", "1:0")
    b.receive("c1", "k", "1:0")
    b.ack("c1", "1:0")
    b.end()
    b.write(cwd / "trace.jsonl")
    # the verdict a command may be handed beside its trace (keyshared report --verdict verdict.json)
    (cwd / "verdict.json").write_text(check_trace(cwd / "trace.jsonl").to_json_text(), encoding="utf-8")
    for relative, source in GIVEN.items():
        (cwd / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, cwd / relative)


BLOCKS = [block for path in DOCS for block in extract(path)]
#: Commands already run (several docs show the same one), with their result.
_SEEN: dict[str, subprocess.CompletedProcess[str]] = {}


def _param(block: Block) -> object:
    marks = [pytest.mark.broker] if block.uses_pulsar_lite() else []
    return pytest.param(block, id=block.source, marks=marks)


@pytest.mark.parametrize("block", [_param(b) for b in BLOCKS])
def test_documented_commands_work_as_written(block: Block, tmp_path: Path) -> None:
    _prepare(tmp_path)
    skipped: list[str] = []
    ran = 0
    for command in block.commands:
        for step in plan(command):
            where = f"{block.source} (line {command.line}): {command.text}"
            if step.run is None:
                skipped.append(f"{command.text.splitlines()[0]!r}: {step.reason}")
                continue
            ran += 1
            key = re.sub(r"^python -m pytest ", "pytest ", step.run)
            if command.output is None and key in _SEEN:  # the same command in another doc: one run is enough
                done = _SEEN[key]
            else:
                done = subprocess.run(
                    ["bash", "-c", step.run],
                    cwd=tmp_path,
                    env=_environment(),
                    capture_output=True,
                    text=True,
                    timeout=_BOUND_S,
                    check=False,
                )
                _SEEN[key] = done
            assert done.returncode == command.code, (
                f"{where}\nran: {step.run}\nexit {done.returncode}, the docs imply {command.code}\n"
                f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
            )
            if command.output is not None and step.compare:
                real = (done.stdout or done.stderr).splitlines()
                assert matches(command.output, real), (
                    f"{where}\nthe output shown differs from a real run's:\n--- shown\n"
                    + "\n".join(command.output)
                    + "\n--- real\n"
                    + "\n".join(real)
                )
    if not ran:
        pytest.skip("; ".join(dict.fromkeys(skipped)))


# --- the extractor itself --------------------------------------------------------------------------------------


#: Why a documented command may go unrun here: it needs Docker, or it is what the CI job does anyway.
UNRUN_REASONS = ("needs a Docker engine", "creates a virtual environment", "runs the project's whole test suite")


def test_every_command_runs_but_those_needing_docker_or_being_ci() -> None:
    unrun = [
        f"{block.source} (line {command.line}): {step.reason}"
        for block in BLOCKS
        for command in block.commands
        for step in plan(command)
        if step.run is None and not step.reason.startswith(UNRUN_REASONS)
    ]
    assert not unrun


def test_no_shell_block_with_a_command_is_passed_over() -> None:
    """A shell block not read as commands (a tree, sample output) holds no line that looks like one: a block
    the extractor misreads would otherwise go unchecked."""
    read = {block.source for block in BLOCKS}
    passed_over = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.M | re.S):
            source = f"{path.relative_to(ROOT)}:{text[: match.start()].count(chr(10)) + 1}"
            if match.group(1) in SHELL_LANGS and source not in read:
                passed_over += [
                    f"{source}: {line}" for line in match.group(2).splitlines() if _COMMAND_LIKE.match(line)
                ]
    assert not passed_over


def test_commands_after_environment_variables_and_comments_are_read(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("```\n# check the source, not the build\nKEYSHARED_PURE=1 keyshared check t.jsonl\n```\n")
    (block,) = extract_text(doc.read_text(), "doc.md")
    assert [c.text for c in block.commands] == ["KEYSHARED_PURE=1 keyshared check t.jsonl"]


def test_the_commands_table_and_the_prompts_are_found() -> None:
    readme = {c.text: c for b in extract(ROOT / "README.md") for c in b.commands}
    assert readme["keyshared run --scenario join-while-pending --out run1"].code == 1
    assert any(c.synopsis and c.text.startswith("keyshared check TRACE") for c in readme.values())
    assert sum(len(b.commands) for b in BLOCKS) >= 30


def test_synopsis_filling() -> None:
    assert fill_synopsis("keyshared check TRACE [--engine python|spark] [--profile NAME] [--json]") == (
        "keyshared check trace.jsonl --engine python --profile pip379 --json"
    )
    assert fill_synopsis("keyshared run [SCENARIO | --scenario NAME|FILE] [-o KEY=VALUE ...]") == (
        "keyshared run join-while-pending -o implementation=pip379"
    )
    assert fill_synopsis("keyshared select --consumers C1,C2,... [same options] [--json] KEY...") == (
        "keyshared select --consumers c1,c2 --json key-0 key-1"
    )


def test_output_matching() -> None:
    assert matches(["a ... c", "...", "z"], ["a b c", "x", "y", "z"])
    assert matches(["a", "...", "z"], ["a", "z"])
    assert not matches(["a", "z"], ["a", "b", "z"])  # a line left out of the docs is a difference
    assert not matches(["seed 1"], ["seed 0"])


def test_plan_names_every_reason() -> None:
    venv = Command('python3 -m venv .venv && .venv/bin/pip install -q -e ".[test]" && .venv/bin/python -m pytest', 1)
    assert [s.run for s in plan(venv)] == [None, None, None]
    suite = plan(Command("python3 -m venv .venv && .venv/bin/pip install . && pytest --pyargs conformance", 1))
    assert suite[-1].run == "pytest --pyargs conformance --collect-only -q -p no:cacheprovider"
    assert all(step.reason for step in suite)
    assert shlex.split(plan(Command("keyshared replay x --runs 10", 1))[0].run or "")[-1] == "2"


# --- target options (-o) shown inline -------------------------------------------------------------------------

#: An inline ``-o`` example: a whole command (``keyshared run --target model -o 'k=v'``) or the option alone
#: (``-o k=v``: on the default target).
_INLINE_OPTION = re.compile(r"`((?:keyshared (?:run|replay|soak)\b[^`]*?)?\s?(?:-o|--option) [^`]+)`")


def inline_option_examples() -> list[tuple[str, str]]:
    """Every inline code span of the docs that passes a target option, as ``(where, command)``."""
    found = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for match in _INLINE_OPTION.finditer(text):
            command = match.group(1).strip()
            if "KEY=VALUE" in command:  # the syntax, not an example
                continue
            if not command.startswith("keyshared"):
                command = f"keyshared run {command}"
            line = text[: match.start()].count("\n") + 1
            found.append((f"{path.relative_to(ROOT)}:{line}", command))
    return found


def test_the_docs_show_target_option_examples() -> None:
    commands = [command for _, command in inline_option_examples()]
    assert any("--target model" in c for c in commands) and any("--target" not in c for c in commands), commands


@pytest.mark.parametrize(("where", "command"), [pytest.param(w, c, id=w) for w, c in inline_option_examples()])
def test_every_inline_option_example_runs_on_the_target_it_names(where: str, command: str, tmp_path: Path) -> None:
    """The target an example names (or the default) takes its options as written: a target that runs here
    (the model, pulsar-lite) runs the command; one that needs Docker is built, which checks every option."""
    from pytest_keyshared.cli import build_parser, main
    from pytest_keyshared.commands._workload import target_options
    from pytest_keyshared.targets import make_target

    argv = shlex.split(command)[1:]
    args = build_parser().parse_args(argv)
    if args.target.startswith("testcontainers"):
        make_target(args.target, artifacts_dir=tmp_path, options=target_options(args))  # raises on a bad option
        return
    code = main([*argv, "--out", str(tmp_path / "out"), *(["-q"] if argv[0] == "run" else [])])
    assert code in (0, 1), f"{where}: {command} exited {code}"  # 1: the target broke a contract, not the option


def test_the_readme_lists_the_targets_the_unknown_target_error_lists() -> None:
    """One source: the README's target list is :func:`target_list`, which the error prints (its Docker tag is the
    default tag, its model release lines those of ``reference_model.versions``)."""
    from pytest_keyshared.targets import parse_target, target_list
    from pytest_keyshared.targets.testcontainers import DEFAULT_IMAGE, DEFAULT_TAG
    from reference_model.errors import InvalidArgument
    from reference_model.versions import RELEASES

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert target_list() in readme
    newest = max(RELEASES)
    assert f"to {newest[0]}.{newest[1]})" in target_list()
    assert set(re.findall(rf"testcontainers:{DEFAULT_IMAGE}:([\w.]+)", readme)) == {DEFAULT_TAG}
    with pytest.raises(InvalidArgument) as error:
        parse_target("nosuch")
    assert str(error.value).endswith(f"Targets: {target_list()}.")
    for spec in re.findall(r"model:[\w.:-]*\w", readme):  # every model target the README names parses
        if "X.Y" not in spec:
            parse_target(spec)


def test_expectation_reasons_cite_nothing_a_user_lacks() -> None:
    """The XFAIL lines print these reasons: each says the deviation in words, citing no note that is neither in
    the repository nor in the package (they cited "pulsar-lite.md 4.4, 5.7", a research note of the project's
    authors, issue 28)."""
    import tomllib

    cited = []
    for path in sorted((ROOT / "conformance" / "expectations").glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        entries = [*data.get("cases", {}).items(), *data.get("contracts", {}).items()]
        for name, entry in entries:
            reason = str(entry.get("reason", ""))
            for note in re.findall(r"[\w./-]+\.md\b", reason):
                if not (ROOT / note).is_file() and not (ROOT / "docs" / note).is_file():
                    cited.append(f"{path.name} {name}: {note}")
            if re.search(r"\(§?\d+\.\d+(?:, §?\d+(?:\.\d+)?)*\)", reason):  # a bare section number of such a note
                cited.append(f"{path.name} {name}: {reason}")
    assert not cited
