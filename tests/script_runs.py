"""Run problem scripts in a subprocess and interrupt them (the run I/O tests)."""

import os
import re
import signal
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def script(name, *args):
    """The command line of ``problems/<name>.py`` with `args`."""
    return [sys.executable, os.path.join(ROOT, "problems", f"{name}.py"), *map(str, args)]


def _installed_root(env):
    """The checkout that the interpreter imports topopt from under `env`, from outside."""
    out = subprocess.run([sys.executable, "-c", "import os, topopt; print(os.path.dirname("
                          "os.path.dirname(os.path.abspath(topopt.__file__))))"],
                         capture_output=True, text=True, env=env, cwd="/")
    return out.stdout.strip()


def installed_env():
    """The environment of a user's shell: no PYTHONPATH, the installed package; in a
    second checkout of the repository (a git worktree) this checkout's code instead."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if _installed_root(env) != ROOT:
        env["PYTHONPATH"] = ROOT
    return env


def script_env():
    return dict(os.environ, PYTHONPATH=ROOT, MPLBACKEND="Agg")


def run_script(cmd, timeout=300, cwd=None):
    return subprocess.run(list(map(str, cmd)), capture_output=True, text=True, env=script_env(),
                          timeout=timeout, cwd=cwd)


def tree_state(*folders):
    """``{path: (size, mtime_ns)}`` of every file under `folders` of the source tree."""
    state = {}
    for folder in folders:
        for dirpath, _, names in os.walk(os.path.join(ROOT, folder)):
            for name in names:
                st = os.stat(os.path.join(dirpath, name))
                state[os.path.join(dirpath, name)] = (st.st_size, st.st_mtime_ns)
    return state


def interrupt_after(cmd, sig, evaluations=5, timeout=300):
    """Start `cmd`, send `sig` once it printed `evaluations` progress lines.

    Returns ``(exit status, stdout, stderr)``.
    """
    proc = subprocess.Popen(list(map(str, cmd)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=script_env())
    seen = []
    try:
        for line in proc.stderr:
            seen.append(line)
            if re.match(rf"\s*{evaluations} s\d+ obj", line):
                break
        proc.send_signal(getattr(signal, sig))
        stdout, stderr = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, stdout, "".join(seen) + stderr


def interrupted_evaluations(stderr, checkpoint):
    """N of the one ``interrupted after N evaluations; resume with --resume PATH`` line."""
    found = re.findall(r"interrupted after (\d+) evaluations; resume with --resume (\S+)\n",
                       stderr)
    assert len(found) == 1 and found[0][1] == str(checkpoint), stderr
    return int(found[0][0])
