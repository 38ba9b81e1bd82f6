#!/usr/bin/env python3
"""Writes kwtrace-04-flag-edges.jsonl: a kwinject trace of compiler runs that try every
flag name of Bear 3.1.1's GCC and Clang tables (`source/citnames/source/semantic/ToolGcc.cc`,
`ToolClang.cc`; the names are listed below) in four forms: exact with three values after
it, a value glued on, a value glued with `=`, and alone at the end; then hand-picked
awkward command lines (empty arguments, launchers, CPATH, `@file`, a flag short of its
value). Every run compiles its own source name, so no two entries are duplicates.

    python3 make_flag_edges.py > kwtrace-04-flag-edges.jsonl
    python3 kw_to_bear_events.py kwtrace-04-flag-edges.jsonl > ev.json
    bear citnames --input ev.json --output cdb.json
    python3 -c 'import json,sys; [print(json.dumps(e, ensure_ascii=False)) for e in json.load(open("cdb.json"))]' \
        > kwtrace-04-flag-edges.bear-3.1.1.compile_commands.jsonl
"""
import json

GCC_NAMES = ["-###", "--", "--help", "--sysroot", "--target-help", "--version", "-A", "-B", "-C", "-CC", "-D", "-E", "-H", "-I", "-L", "-M", "-MD", "-MF", "-MG", "-MM", "-MMD", "-MP", "-MQ", "-MT", "-O", "-P", "-Q", "-S", "-T", "-U", "-W", "-Wa,", "-Wl,", "-Wp,", "-X", "-Xassembler", "-Xlinker", "-Xpreprocessor", "-Y", "-ansi", "-aux-info", "-c", "-d", "-dumpbase", "-dumpbase-ext", "-dumpdir", "-e", "-entry", "-f", "-ffile-prefix-map", "-flinker-output", "-fplugin", "-fuse-ld", "-g", "-idirafter", "-imacros", "-imultilib", "-include", "-iplugindir", "-iprefix", "-iquote", "-isysroot", "-isystem", "-iwithprefix", "-iwithprefixbefore", "-l", "-m", "-no", "-no-pie", "-nodefaultlibs", "-nolibc", "-nostartfiles", "-nostdlib", "-o", "-p", "-pass-exit-codes", "-pie", "-pipe", "-pthread", "-r", "-rdynamic", "-remap", "-s", "-save", "-shared", "-specs", "-static", "-static-pie", "-std", "-symbolic", "-tno", "-traditional", "-trigraphs", "-u", "-undef", "-v", "-wrapper", "-x", "-z", "@"]
CLANG_NAMES = ["--analyze", "--analyzer-no-default-checks", "--analyzer-output", "--autocomplete", "--config", "--constant-cfstrings", "--cuda-compile-host-device", "--cuda-device-only", "--cuda-host-only", "--cuda-include-ptx", "--cuda-noopt-device-debug", "--dyld-prefix", "--gcc-toolchain", "--gpu-instrument-lib", "--gpu-max-threads-per-block", "--hip-link", "--hip-version", "--language", "--migrate", "--no-cuda-include-ptx", "--no-cuda-noopt-device-debug", "--output", "--pipe", "--prefix", "--print-diagnostic-categories", "--profile", "--profile-blocks", "--save", "--serialize-diagnostics", "--sysroot", "--target", "--traditional", "--unwindlib", "-EB", "-F", "-ObjC", "-ObjC++", "-Xanalyzer", "-Xarch", "-Xassembler", "-Xclang", "-Xcuda", "-Xopenmp-target", "-Xopenmp-target=", "-Xpreprocessor", "-Z", "-a", "-all_load", "-allowable_client", "-arch", "-arch_errors_fatal", "-arch_only", "-arcmt-migrate-emit-errors", "-arcmt-migrate-report-output", "-bind_at_load", "-bundle", "-bundle_loader", "-cc1", "-client_name", "-compatibility_version", "-cuid", "-current_version", "-dead_strip", "-dependency-dot", "-dependency-file", "-dsym-dir", "-dumpmachine", "-dumpversion", "-dylib_file", "-dylinker", "-dylinker_install_name", "-dynamic", "-dynamiclib", "-emit-ast", "-enable-trivial-auto-var-init-zero-knowing-it-will-be-removed-from-clang", "-exported_symbols_list", "-faligned-new", "-force_load", "-framework", "-gcodeview", "-gcodeview-ghash", "-gno-codeview-ghash", "-headerpad_max_install_names", "-ibuiltininc", "-image_base", "-index-header-map", "-init", "-install_name", "-interface-stub-version", "-keep_private_externs", "-lazy", "-mllvm", "-module-dependency-dir", "-multiply_defined", "-objcmt", "-object", "-r", "-sect", "-seg1addr", "-seg_", "-segaddr", "-segcreate", "-seglinkedit", "-segprot", "-serialize-diagnostics", "-single_module", "-sub_", "-target", "-time", "-traditional", "-twolevel", "-umbrella", "-unexported_symbols_list", "-unwindlib", "-x"]

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/dev"}
records = []


def run(exe, args, env_diff=None, work_dir="/home/dev/proj"):
    records.append({"id": 1000 + len(records), "parent_id": -1, "work_dir": work_dir,
                    "executable": exe, "args": args, "env-diff": env_diff or {}})


def forms(name, n):
    src = f"s{n}.c"
    return [
        [src, name, "v1", "v2", "v3", "-o", f"o{n}.o"],
        [src, name + "x", "v1", "-o", f"o{n}.o"],
        [src, name + "=x", "v1", "-o", f"o{n}.o"],
        [src, "-o", f"o{n}.o", name],
    ]


for exe, names in [("/usr/bin/gcc", GCC_NAMES), ("/usr/bin/clang", sorted(set(GCC_NAMES) | set(CLANG_NAMES)))]:
    base = exe.rsplit("/", 1)[1]
    for name in names:
        for form in forms(name, len(records)):
            # a fresh source name per run
            form[0] = f"s{len(records)}.c"
            run(exe, [base, "-c"] + form)

# hand-picked
n = len(records)
run("/usr/bin/gcc", ["gcc", "-c", "e1.c", ""])
run("/usr/bin/gcc", ["gcc", "-c", "", "e2.c"])
run("/usr/bin/gcc", ["gcc", "-c", "e3.c", "-o"])
run("/usr/bin/gcc", ["gcc", "-c", "e4.c", "-x"])
run("/usr/bin/gcc", ["gcc", "-c", "e5.c"], {"CPATH": ""})
run("/usr/bin/gcc", ["gcc", "-c", "e6.c"], {"CPATH": ":/inc:", "OBJC_INCLUDE_PATH": "/objc"})
run("/usr/bin/gcc", ["gcc", "-c", "e7.c", "-o"], {"C_INCLUDE_PATH": "/inc"})
run("/usr/bin/gcc", ["gcc", "-c", "@e8.c", "e8b.c"])
run("/usr/bin/gcc", ["gcc", "e9.c", "-Wl,-rpath,/x", "-static-libgcc", "-lm", "-L", "/l", "-shared"])
run("/usr/bin/gcc", ["gcc", "-c", "e10.c", "-MD", "-MF", "e10.d", "-MT", "e10.o", "-MFe10x.d"])
run("/usr/bin/gcc", ["gcc", "-E", "e11.c"])
run("/usr/bin/gcc", ["gcc", "-M", "e12.c"])
run("/usr/bin/gcc", ["gcc", "--help=optimizers", "e13.c"])
run("/usr/bin/gcc", ["gcc"])
run("/usr/bin/clang", ["clang", "-c", "e15.c", "-Xclang", "-load", "-Xclang", "/p/LLVMHello.so"])
run("/usr/bin/clang", ["clang", "-cc1", "e16.c", "-emit-obj"])
run("/usr/bin/clang++", ["clang++", "-emit-ast", "e17.cpp", "-target", "x86_64-linux-gnu", "-mllvm", "-x"])
run("/usr/bin/ccache", ["ccache", "gcc", "-c", "e18.c"])
run("/usr/bin/ccache", ["ccache", "clang", "-c", "e19.c", "-Xclang", "-load"])
run("/usr/bin/ccache", ["ccache", "-s"])
run("/usr/bin/ccache", ["ccache", "", "-c", "e21.c"])
run("/usr/bin/distcc", ["distcc", "gcc", "-c", "e22.c"])
run("/usr/bin/distcc", ["distcc", "--show-hosts"])
run("/usr/bin/nvcc", ["nvcc", "-c", "e24.cu", "-Xclang", "-load"])
run("/usr/bin/x86_64-linux-gnu-gcc-12", ["x86_64-linux-gnu-gcc-12", "-c", "sub/../e25.c", "-o", "./out/../e25.o"], work_dir="/home/dev/proj/build/")
run("/usr/bin/icecc", ["icecc", "gcc", "-c", "e26.c"])
run("/usr/bin/g++", ["g++", "-c", "e27.cc", "-include", "pre.h", "-isystem", "/sys", "-D", "A=1", "-U", "B", "-I", "inc"])
run("/usr/bin/gcc", ["gcc", "-c", "e28.c", "-o", "a.o", "-o", "b.o"])
run("/usr/bin/gcc", ["gcc", "e29.c", "e29b.c", "e29.o", "libx.a"])

print(json.dumps({"version": 101}))
print(json.dumps({"creator": "make_flag_edges.py (hand-made)"}))
print(json.dumps({"env": ENV}))
for r in records:
    print(json.dumps(r, ensure_ascii=False, separators=(",", ":")))
