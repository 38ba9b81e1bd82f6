#!/usr/bin/env python3
"""Regenerate the expected outputs of the ported Bear 3.1.1 test cases by running
the real Bear 3.1.1 (Debian 12: `apt-get install bear`) on every case:

    python3 make_expected.py [CASE_DIR...]      # default: every case under this directory

Each case directory holds `case.json` (the runs) and the inputs. A run is one of
  * a build:   {"command": [...], "env": {...}, "clear_env": bool, "append": bool,
                "config": "FILE", "expect": "expected-N.json", "status": N}
               -> bear --output OUT [--append] [--config FILE] -- COMMAND
  * a trace:   {"trace": "trace.jsonl", "config": ..., "append": ..., "existing": "FILE",
                "expect": ...}
               -> kw_to_bear_events.py TRACE > EVENTS; bear citnames --input EVENTS --output OUT ...
  * a status:  {"bear": [ARGS], "tracekit": [ARGS], "status": N or "nonzero"}
All runs of a case share one scratch directory, in order. Inputs are copied there with
@T@ (the scratch directory), @CC@ @CXX@ @TRUE@ @SH@ (cc, c++, true, sh found on PATH, as
lit's `which`) and @PATH@ replaced; the outputs get the same placeholders back, so they
do not depend on this machine. The environment is lit's: CC, CXX, ECHO, TRUE, FALSE set.
"""
import json, os, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TO_EVENTS = os.path.join(HERE, "..", "kw_to_bear_events.py")
TOOLS = {k: shutil.which(v) for k, v in
         [("CC", "cc"), ("CXX", "c++"), ("TRUE", "true"), ("FALSE", "false"), ("ECHO", "echo"), ("SH", "sh")]}


def subst(text, t):
    text = text.replace("@T@", t).replace("@PATH@", os.environ["PATH"])
    for k in ("CC", "CXX", "TRUE", "SH"):
        text = text.replace(f"@{k}@", TOOLS[k])
    return text


def placeholders(v, t):
    if isinstance(v, list):
        return [placeholders(x, t) for x in v]
    if isinstance(v, dict):
        return {k: placeholders(x, t) for k, x in v.items()}
    if isinstance(v, str):
        for k in ("CC", "CXX", "TRUE"):
            if v == TOOLS[k]:
                return f"@{k}@"
        return v.replace(t, "@T@")
    return v


def status_ok(want, got):
    return got != 0 if want == "nonzero" else got == want


def run_case(case_dir):
    case = json.load(open(os.path.join(case_dir, "case.json")))
    t = os.path.realpath(tempfile.mkdtemp(prefix="bear-case-"))
    for root, _, files in os.walk(case_dir):
        for name in files:
            if name == "case.json" or name.startswith("expected-"):
                continue
            src = os.path.join(root, name)
            dst = os.path.join(t, os.path.relpath(src, case_dir))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with open(src) as f:
                text = f.read()
            with open(dst, "w") as f:
                f.write(subst(text, t))
            shutil.copymode(src, dst)
    if "setup" in case:
        subprocess.run(["sh", "-c", case["setup"]], cwd=t, check=True)
    out = os.path.join(t, "compile_commands.json")
    for i, r in enumerate(case["runs"]):
        env = {} if r.get("clear_env") else dict(os.environ, **{k: TOOLS[k] for k in ("CC", "CXX", "ECHO", "TRUE", "FALSE")})
        env.update({k: subst(v, t) for k, v in r.get("env", {}).items()})
        extra = (["--append"] if r.get("append") else []) + \
                (["--config", os.path.join(t, r["config"])] if "config" in r else [])
        if "bear" in r:
            cmd = ["bear"] + r["bear"]
        elif "trace" in r:
            events = os.path.join(t, "events.json")
            with open(events, "w") as f:
                subprocess.run([sys.executable, TO_EVENTS, os.path.join(t, r["trace"])], stdout=f, check=True)
            if "existing" in r:
                shutil.copy(os.path.join(t, r["existing"]), out)
            cmd = ["bear", "citnames", "--input", events, "--output", out] + extra
        else:
            cmd = ["bear", "--output", out] + extra + ["--"] + [subst(a, t) for a in r["command"]]
        p = subprocess.run(cmd, cwd=t, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        want = r.get("status", 0)
        if not status_ok(want, p.returncode):
            sys.exit(f"{case_dir} run {i + 1}: bear exited {p.returncode}, the case says {want}")
        if "expect" in r:
            with open(out) as f:
                db = json.load(f)
            with open(os.path.join(case_dir, r["expect"]), "w") as f:
                json.dump(placeholders(db, t), f, indent=2, ensure_ascii=False)
                f.write("\n")
            print(f"{os.path.relpath(case_dir, HERE)}: {r['expect']}: {len(db)} entries")
    shutil.rmtree(t)


def main():
    dirs = sys.argv[1:] or sorted(os.path.dirname(os.path.join(root, "case.json"))
                                  for root, _, files in os.walk(HERE) if "case.json" in files)
    for d in dirs:
        run_case(os.path.abspath(d))


if __name__ == "__main__":
    main()
