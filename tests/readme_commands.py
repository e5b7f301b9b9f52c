"""CI: every command in the ```bash blocks of README.md and docs/*.md (docs/doc_pages.py lists the pages), run as a
new user would after the README's install.

    python tests/readme_commands.py [--test-venv .venv]

In a copy of the repository (tracked and untracked files, no build output) it runs the README's install command
as written (`python3 -m venv .venv && .venv/bin/pip install . && ...`): a non-editable install, so a dependency
the README's features need but pyproject.toml lacks fails here. Every other command then runs from that copy's
root with that `specadvisor` (each distinct command once, page by page, in order), on the files the examples name
(the plan, the committed validation data) or on files made here to stand for the user's own (./my-model,
chats.jsonl, a metrics server at localhost:8000).

Commands that need vLLM, torch or transformers run with the test venv's `specadvisor` (tests/run.sh built it);
the slow ones run a quick variant, listed in QUICK with the reason. Optional parts in brackets run both ways:
without them, and with them (each `a|b` choice in turn). Placeholders in capitals (DRAFT, DIR, FILE) stand for the
files in PLACEHOLDERS. Commands of other programs (`vllm serve`, `vllm bench`, `curl`) are the user's side of an
example and need a GPU server: they are listed, not run; the files they would write are in tests/data/bench.
A command passes when it exits 0 and prints no traceback.
"""

from __future__ import annotations

import argparse
import http.server
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("doc_pages", ROOT / "docs/doc_pages.py")
doc_pages = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(doc_pages)
TRACEBACK = re.compile(r"^Traceback \(most recent call last\):", re.MULTILINE)  # not vLLM's logged ones

# Never run here, with the reason.
SKIP = {"bash tests/run.sh": "the test suite itself: .ci/run runs it right before this script",
        "pip install 'specadvisor[vllm,nvml]'": "vLLM for CUDA: a GPU machine's install",
        "benchmarks/gpu_smoke.sh /tmp/gpu-smoke": ("needs a GPU; tests/benchmarks/test_gpu_smoke.py checks that it "
                                                   "parses and that its flags exist")}
# Run as a quicker variant: command prefix (as a page quotes it) -> (variant, why).
QUICK = {
    "specadvisor calibrate --target meta-llama/": (
        "specadvisor calibrate --help", "an 8B + 1B calibration takes minutes of engine time on a CPU"),
    "specadvisor calibrate --target /tmp/pair/target": (
        "specadvisor calibrate --help", "a tiny pair's calibration is ~160 s of engine time; tests/run.sh's engine "
        "tests calibrate for real"),
    "specadvisor validate --passes": ("specadvisor validate --help", "~21 min a pass on 2 vCPUs"),
    "specadvisor validate --resume": ("specadvisor validate --help", "continues a run that takes ~21 min a pass"),
    "specadvisor calibrate --target /tmp/qpair/target": (
        "specadvisor calibrate --help", "the Qwen2-style pair's calibration is ~3 min of engine time"),
    "specadvisor calibrate --target /tmp/mpair/target": (
        "specadvisor calibrate --help", "the MoE pair's calibration on its own weights: a 150 s budget of timed steps "
        "beside its engine starts; tests/run.sh's engine tests calibrate for real"),
    "specadvisor validate --family": ("specadvisor validate --help", "~17 min a pass on 2 vCPUs"),
    "specadvisor validate --num-gpus": ("specadvisor validate --help", "~8 min a pass of its smaller grid at TP = 2"),
    "specadvisor validate --moe": ("specadvisor validate --help", "15 engine starts in its 3 passes: 819 s in a clean "
                                   "CI run on 2 vCPUs (2026-12-04)"),
    "specadvisor acceptance measure --target ./target --draft": (
        "specadvisor acceptance measure --help", "~45 s of engine time; test_measure_acceptance.py's engine test runs "
        "the same command on a generated pair"),
}
# A page's placeholder -> what stands for it, relative to the copy's root ({tmp}: a scratch folder).
PLACEHOLDERS = {"DRAFT": "tests/data/bench/draft", "MODEL": "tests/data/bench/target", "DIR": "{tmp}/out-dir",
                "FILE": "{tmp}/out-file.json"}
# Files the `vllm bench` example writes, as committed from real runs: a page's name -> file in tests/data/bench.
BENCH_FILES = {"baseline.json": "baseline.json", "spec.json": "spec.json", "before.prom": "before.prom",
               "after.prom": "after.prom", "lat-b8.json": "lat-base.json",
               "lat-b8.pytorch.json": "lat-base.pytorch.json"}
# Subcommands that import vLLM, torch or transformers: not in `pip install .`, so they run in the test venv.
NEEDS_ENGINE = ("make-test-pair", "calibrate", "validate", "acceptance measure", "--tokenizer")

CHATS = [("Write a function that adds two numbers.", "def add(a, b):\n    return a + b\n"),
         ("Now one that subtracts them, in the same style.", "def sub(a, b):\n    return a - b\n"),
         ("Repeat the add function with a docstring.", "def add(a, b):\n    \"\"\"Add.\"\"\"\n    return a + b\n")]


def readme_commands(text: str) -> list[str]:
    """The commands of the ```bash blocks, continuation lines joined (comments are dropped when run)."""
    commands = []
    for block in doc_pages.FENCE.findall(text):
        commands += [line.strip() for line in block.replace("\\\n", " ").splitlines() if line.strip()]
    return commands


def page_commands() -> list[str]:
    """Every page's commands, each distinct one once (the first time a page quotes it)."""
    return list(dict.fromkeys(c for page in doc_pages.pages() for c in readme_commands(page.read_text())))


def variants(command: str) -> list[str]:
    """Optional `[...]` parts: the command without them, then with them all, once per alternative of an `a|b`
    choice inside them."""
    if "[" not in command:
        return [command]
    optional = re.findall(r"\[([^\]]*)\]", command)
    choices = max((len(word.split("|")) for part in optional for word in part.split() if "|" in word), default=1)
    out = [re.sub(r"\s*\[[^\]]*\]", "", command)]
    for i in range(choices):
        pick = lambda m: " ".join(w.split("|")[min(i, w.count("|"))] for w in m[1].split())  # noqa: E731
        out.append(re.sub(r"\[([^\]]*)\]", pick, command))
    return out


def _untracked() -> set[str]:
    return set(subprocess.run(["git", "ls-files", "-o", "--exclude-standard"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.split())


def copy_repository(dest: Path) -> None:
    """The files a clone has (tracked, plus untracked ones not ignored): no .venv, no build output."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


class _Metrics(http.server.BaseHTTPRequestHandler):
    """A stand-in vLLM server: /metrics answers with a real server's spec-decode counters (tests/data), which grow
    with every scrape as a serving engine's do (so `--second`, a later scrape, sees traffic in between)."""

    sample = (ROOT / "tests/data/vllm_metrics_ngram.prom").read_text()
    scrapes = 0

    def do_GET(self):
        found = self.path == "/metrics"
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.end_headers()
        if not found:
            self.wfile.write(b"not found")
            return
        type(self).scrapes += 1
        grown = re.sub(r"^(vllm:spec_decode_\S*_total\{[^}]*\}) (\S+)$",
                       lambda m: f"{m[1]} {float(m[2]) * type(self).scrapes}", self.sample, flags=re.MULTILINE)
        self.wfile.write(grown.encode())

    def log_message(self, *args):
        pass


def user_files(home: Path, test_venv: Path) -> None:
    """What the examples assume the user has: model folders with a config.json, a corpus, prompts."""
    for folder, profile in (("my-model", "llama-3.1-8b-instruct"), ("my-draft", "llama-3.2-1b-instruct")):
        (home / folder).mkdir()
        shutil.copy(ROOT / "profiles/models" / f"{profile}.json", home / folder / "config.json")
    (home / "chats.jsonl").write_text("".join(json.dumps({"prompt": p, "response": r}) + "\n" for p, r in CHATS))
    # token ids, well inside the test pair's vocabulary: its target has no tokenizer
    (home / "prompts.jsonl").write_text("".join(json.dumps({"prompt_token_ids": [7, 8, 9, 10, 7, 8, 9, i]}) + "\n"
                                                for i in range(11, 14)))
    # ./target and ./draft: the test pair the README's `make-test-pair` writes (that command is run below too)
    run(f"{test_venv}/bin/specadvisor make-test-pair --out {home} --scale 0.1", home)
    for name, committed in BENCH_FILES.items():
        shutil.copy(ROOT / "tests/data/bench" / committed, home / name)


def add_tokenizer(folder: Path, test_venv: Path) -> None:
    """A word-level tokenizer of the chats, saved beside the test pair's weights (its ids fit the vocabulary), so
    `--tokenizer ./target` has the model's tokenizer to read. Made in the test venv: it has transformers."""
    code = ("import json, sys, tokenizers\n"
            "from transformers import PreTrainedTokenizerFast\n"
            "texts = [t for line in open('chats.jsonl') for t in json.loads(line).values()]\n"
            "tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(unk_token='[UNK]'))\n"
            "tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()\n"
            "tok.train_from_iterator(texts, tokenizers.trainers.WordLevelTrainer(special_tokens=['[UNK]']))\n"
            f"PreTrainedTokenizerFast(tokenizer_object=tok, unk_token='[UNK]').save_pretrained({str(folder)!r})\n")
    run(f"{test_venv}/bin/python -c {shlex.quote(code)}", folder.parent)


def run(command: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, env=env)
    if result.returncode != 0 or TRACEBACK.search(result.stderr):
        raise RuntimeError(f"`{command}` exited {result.returncode}:\n{result.stdout[-2000:]}{result.stderr[-4000:]}")
    return result


def _runs_in_test_venv(command: str) -> bool:
    words = shlex.split(command, comments=True)
    if "--help" in words or "--from-bench" in words:  # no engine runs: these must work from `pip install .`
        return False
    return words[1] in NEEDS_ENGINE or " ".join(words[1:3]) in NEEDS_ENGINE or "--tokenizer" in words


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test-venv", default=str(ROOT / ".venv"), help="the venv tests/run.sh built (has vLLM)")
    args = parser.parse_args(argv)
    test_venv = Path(args.test_venv).resolve()
    commands = page_commands()
    install = next(c for c in commands if "pip install ." in c)
    failures = []
    before = _untracked()  # the test venv is an editable install: a default output path would land in this tree
    with tempfile.TemporaryDirectory(prefix="readme-") as tmp:
        home = Path(tmp) / "specadvisor"
        home.mkdir()
        copy_repository(home)
        env = {**os.environ, "MPLBACKEND": "Agg", "NO_COLOR": "1"}
        env.pop("VIRTUAL_ENV", None)
        start = time.monotonic()
        run(install, home, env)  # the README's install, as written
        print(f"ok   {time.monotonic() - start:5.1f} s  {install}")
        fresh = home / ".venv/bin"
        where = run(f"{fresh}/python -c 'import advisor; print(advisor.__file__)'", Path(tmp)).stdout
        assert "site-packages" in where, f"the fresh venv runs the source tree, not the installed package: {where}"
        user_files(home, test_venv)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Metrics)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        port = server.server_address[1]
        try:
            for readme_command in commands:
                if readme_command == install:
                    continue
                bare = re.sub(r"\s+#.*$", "", readme_command)  # the command, without its comment
                if bare in SKIP or not readme_command.startswith("specadvisor "):
                    why = SKIP.get(bare, "another program's command: the user's own server and benchmark")
                    print(f"skip            {readme_command}  ({why})")
                    continue
                for command in variants(readme_command):
                    quick = next((v for prefix, v in QUICK.items() if command.startswith(prefix)), None)
                    shown = command if quick is None else f"{quick[0]}  (for: {command}; {quick[1]})"
                    command = quick[0] if quick else command
                    in_test_venv = _runs_in_test_venv(command)
                    if "--tokenizer ./target" in command and not (home / "target/tokenizer.json").exists():
                        add_tokenizer(home / "target", test_venv)
                    binary = (test_venv if in_test_venv else fresh.parent) / "bin/specadvisor"
                    concrete = command.replace("localhost:8000", f"127.0.0.1:{port}").replace("/tmp/", f"{tmp}/")
                    for word, stands_for in PLACEHOLDERS.items():
                        concrete = re.sub(rf"(?<=\s){word}\b", stands_for.format(tmp=tmp), concrete)
                    concrete = re.sub(r"^specadvisor\b", str(binary), concrete)
                    start = time.monotonic()
                    try:
                        run(concrete, home, env)
                        print(f"ok   {time.monotonic() - start:5.1f} s  {'[test venv] ' * in_test_venv}{shown}")
                    except RuntimeError as exc:
                        failures.append(shown)
                        print(f"FAIL {time.monotonic() - start:5.1f} s  {shown}\n{exc}")
        finally:
            server.shutdown()
            server.server_close()
    stray = sorted(_untracked() - before)
    if stray:
        failures.append("stray files")
        print(f"FAIL the commands wrote into the repository: {', '.join(stray)}")
    print(f"{len(failures)} of the pages' commands failed" if failures else "every command of the pages ran")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
