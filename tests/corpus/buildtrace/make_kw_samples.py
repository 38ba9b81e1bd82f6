#!/usr/bin/env python3
"""Write the three hand-designed example build traces in the kwinject JSON-lines layout.

The process trees, pids, argv and environments below were designed by hand from the
format description in ../../../docs/formats/kwinject.md and from what gcc 12, GNU make 4.3, dash and
ninja really exec on Debian 12 (checked with strace -f -v).  No Klocwork tool was used.
The builds run with TMPDIR=/home/dev/tmpdir, so gcc's temporary files live there.
Run:  python3 make_kw_samples.py [OUTPUT_DIR]      (default: the current directory)
"""
import json, os, sys

out = sys.argv[1] if len(sys.argv) > 1 else "."
os.makedirs(out, exist_ok=True)

def dump(path, header, events):
    with open(os.path.join(out, path), "w", encoding="utf-8") as f:
        for obj in header + events:
            f.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")

def ev(id_, parent, wd, exe, args, diff, with_parent=True):
    d = {"id": id_}
    if with_parent:
        d["parent_id"] = parent
    d.update({"work_dir": wd, "executable": exe, "args": args, "env-diff": diff})
    return d

GCCLIB = "/usr/lib/gcc/x86_64-linux-gnu/12"
TMP = "/home/dev/tmpdir"          # $TMPDIR of the hand-made builds: gcc puts its temporary files there
LINK_TAIL_LIBS = ["-lgcc", "--push-state", "--as-needed", "-lgcc_s", "--pop-state", "-lc", "-lgcc",
                  "--push-state", "--as-needed", "-lgcc_s", "--pop-state",
                  GCCLIB + "/crtendS.o", GCCLIB + "/../../../x86_64-linux-gnu/crtn.o"]
def ld_args(prog, out_, objs, res):
    return [prog, "-plugin", GCCLIB + "/liblto_plugin.so", "-plugin-opt=" + GCCLIB + "/lto-wrapper",
            "-plugin-opt=-fresolution=" + res, "-plugin-opt=-pass-through=-lgcc",
            "-plugin-opt=-pass-through=-lgcc_s", "-plugin-opt=-pass-through=-lc",
            "-plugin-opt=-pass-through=-lgcc", "-plugin-opt=-pass-through=-lgcc_s",
            "--build-id", "--eh-frame-hdr", "-m", "elf_x86_64", "--hash-style=gnu", "--as-needed",
            "-dynamic-linker", "/lib64/ld-linux-x86-64.so.2", "-pie", "-o", out_,
            GCCLIB + "/../../../x86_64-linux-gnu/Scrt1.o", GCCLIB + "/../../../x86_64-linux-gnu/crti.o",
            GCCLIB + "/crtbeginS.o", "-L" + GCCLIB, "-L" + GCCLIB + "/../../../x86_64-linux-gnu",
            "-L" + GCCLIB + "/../../../../lib", "-L/lib/x86_64-linux-gnu", "-L/lib/../lib",
            "-L/usr/lib/x86_64-linux-gnu", "-L/usr/lib/../lib", "-L" + GCCLIB + "/../../.."] + objs + LINK_TAIL_LIBS

# ---------------------------------------------------------------------------------------
# 1. make -j2 on a small zlib-like tree: make -> sh -> gcc -> cc1/as, make -> gcc -> collect2 -> ld,
#    make -> env -u LANG LC_ALL=C gcc (env execs gcc in place: same pid, removed variable = null).
# ---------------------------------------------------------------------------------------
TOP = "/home/dev/zlib-1.3"
ENV1 = {"HOME": "/home/dev", "LANG": "en_US.UTF-8", "LOGNAME": "dev",
        "PATH": "/usr/local/bin:/usr/bin:/bin", "PWD": TOP, "SHELL": "/bin/bash",
        "TERM": "xterm-256color", "TMPDIR": TMP, "USER": "dev"}
MAKEVARS = {"MAKEFLAGS": " -j2 --jobserver-auth=3,4", "MAKELEVEL": "1", "MFLAGS": "-j2"}
def collect(opts, lto=False):
    d = dict(MAKEVARS)
    d.update({"COLLECT_GCC": "gcc", "OFFLOAD_TARGET_NAMES": "nvptx-none:amdgcn-amdhsa",
              "OFFLOAD_TARGET_DEFAULT": "1", "COLLECT_GCC_OPTIONS": opts})
    if lto:
        d["COLLECT_LTO_WRAPPER"] = GCCLIB + "/lto-wrapper"
    return d

t1 = [
    ev(4100, -1, TOP, "/usr/bin/make", ["make", "-j2"], {}),
    # recipe with a shell metacharacter -> make runs /bin/sh -c
    ev(4101, 4100, TOP, "/usr/bin/dash",
       ["/bin/sh", "-c", "cd lib && gcc -O2 -I.. -DHAVE_UNISTD_H -c adler32.c -o adler32.o"], MAKEVARS),
    ev(4102, 4101, TOP + "/lib", "/usr/bin/gcc",
       ["gcc", "-O2", "-I..", "-DHAVE_UNISTD_H", "-c", "adler32.c", "-o", "adler32.o"],
       dict(MAKEVARS, OLDPWD=TOP, PWD=TOP + "/lib")),
    ev(4103, 4102, TOP + "/lib", GCCLIB + "/cc1",
       [GCCLIB + "/cc1", "-quiet", "-I", "..", "-imultiarch", "x86_64-linux-gnu", "-D", "HAVE_UNISTD_H",
        "adler32.c", "-quiet", "-dumpbase", "adler32.c", "-dumpbase-ext", ".c", "-mtune=generic",
        "-march=x86-64", "-O2", "-fasynchronous-unwind-tables", "-o", TMP + "/ccQ3kT9a.s"],
       dict(collect("'-O2' '-I' '..' '-D' 'HAVE_UNISTD_H' '-c' '-o' 'adler32.o' '-mtune=generic' '-march=x86-64'"),
            OLDPWD=TOP, PWD=TOP + "/lib")),
    ev(4104, 4102, TOP + "/lib", "/usr/bin/as",
       ["as", "-I", "..", "--64", "-o", "adler32.o", TMP + "/ccQ3kT9a.s"],
       dict(collect("'-O2' '-I' '..' '-D' 'HAVE_UNISTD_H' '-c' '-o' 'adler32.o' '-mtune=generic' '-march=x86-64'"),
            OLDPWD=TOP, PWD=TOP + "/lib")),
    # simple recipe -> GNU make execs the compiler directly (no shell)
    ev(4105, 4100, TOP, "/usr/bin/gcc",
       ["gcc", "-O2", "-Ilib", "-DHAVE_UNISTD_H", "-c", "example.c", "-o", "example.o"], MAKEVARS),
    ev(4106, 4105, TOP, GCCLIB + "/cc1",
       [GCCLIB + "/cc1", "-quiet", "-I", "lib", "-imultiarch", "x86_64-linux-gnu", "-D", "HAVE_UNISTD_H",
        "example.c", "-quiet", "-dumpbase", "example.c", "-dumpbase-ext", ".c", "-mtune=generic",
        "-march=x86-64", "-O2", "-fasynchronous-unwind-tables", "-o", TMP + "/ccVb21Lx.s"],
       collect("'-O2' '-I' 'lib' '-D' 'HAVE_UNISTD_H' '-c' '-o' 'example.o' '-mtune=generic' '-march=x86-64'")),
    ev(4107, 4105, TOP, "/usr/bin/as",
       ["as", "-I", "lib", "--64", "-o", "example.o", TMP + "/ccVb21Lx.s"],
       collect("'-O2' '-I' 'lib' '-D' 'HAVE_UNISTD_H' '-c' '-o' 'example.o' '-mtune=generic' '-march=x86-64'")),
    # env -u LANG LC_ALL=C gcc ... : env (pid 4108) execs gcc without forking, so gcc keeps id 4108.
    # LANG is removed (null) and LC_ALL added relative to the top-level env.
    ev(4108, 4100, TOP, "/usr/bin/env",
       ["env", "-u", "LANG", "LC_ALL=C", "gcc", "-O2", "-Ilib", "-c", "crc32.c", "-o", "crc32.o"], MAKEVARS),
    ev(4108, 4100, TOP, "/usr/bin/gcc",
       ["gcc", "-O2", "-Ilib", "-c", "crc32.c", "-o", "crc32.o"], dict(MAKEVARS, LANG=None, LC_ALL="C")),
    ev(4109, 4108, TOP, GCCLIB + "/cc1",
       [GCCLIB + "/cc1", "-quiet", "-I", "lib", "-imultiarch", "x86_64-linux-gnu", "crc32.c", "-quiet",
        "-dumpbase", "crc32.c", "-dumpbase-ext", ".c", "-mtune=generic", "-march=x86-64", "-O2",
        "-fasynchronous-unwind-tables", "-o", TMP + "/cc0pWm4z.s"],
       dict(collect("'-O2' '-I' 'lib' '-c' '-o' 'crc32.o' '-mtune=generic' '-march=x86-64'"), LANG=None, LC_ALL="C")),
    ev(4110, 4108, TOP, "/usr/bin/as",
       ["as", "-I", "lib", "--64", "-o", "crc32.o", TMP + "/cc0pWm4z.s"],
       dict(collect("'-O2' '-I' 'lib' '-c' '-o' 'crc32.o' '-mtune=generic' '-march=x86-64'"), LANG=None, LC_ALL="C")),
    # archive, then link with gcc -> collect2 -> ld
    ev(4111, 4100, TOP, "/usr/bin/ar", ["ar", "rcs", "libz.a", "lib/adler32.o", "crc32.o"], MAKEVARS),
    ev(4112, 4100, TOP, "/usr/bin/gcc", ["gcc", "-O2", "-o", "example", "example.o", "-L.", "-lz"], MAKEVARS),
    ev(4113, 4112, TOP, GCCLIB + "/collect2",
       ld_args(GCCLIB + "/collect2", "example", ["-L.", "example.o", "-lz"], TMP + "/ccR7uYt2.res"),
       collect("'-O2' '-o' 'example' '-L.' '-mtune=generic' '-march=x86-64'", lto=True)),
    ev(4114, 4113, TOP, "/usr/bin/ld",
       ld_args("/usr/bin/ld", "example", ["-L.", "example.o", "-lz"], TMP + "/ccR7uYt2.res"),
       collect("'-O2' '-o' 'example' '-L.' '-mtune=generic' '-march=x86-64'", lto=True)),
]
dump("kwtrace-01-make-nested.jsonl",
     [{"version": 101}, {"creator": "kwinject, version 2023.4.0 (hand-written sample)"}, {"env": ENV1}], t1)

# ---------------------------------------------------------------------------------------
# 2. CMake + Ninja with response files: compile with @flags, archive with @objects, link with @objects.
#    ninja always runs commands through /bin/sh -c.  The driver expands @file before cc1plus sees it.
# ---------------------------------------------------------------------------------------
B = "/home/dev/proj/build"
S = "/home/dev/proj"
ENV2 = {"HOME": "/home/dev", "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin", "PWD": B, "TMPDIR": TMP, "USER": "dev"}
CXXOPTS = "'-I' '/home/dev/proj/include' '-D' 'APP_VERSION=\"1.2\"' '-O2' '-std=gnu++17' '-c' '-o' 'CMakeFiles/app.dir/src/main.cpp.o' '-shared-libgcc' '-mtune=generic' '-march=x86-64'"
CXXENV = {"COLLECT_GCC": "/usr/bin/g++", "OFFLOAD_TARGET_NAMES": "nvptx-none:amdgcn-amdhsa",
          "OFFLOAD_TARGET_DEFAULT": "1", "COLLECT_GCC_OPTIONS": CXXOPTS}
t2 = [
    ev(5200, -1, B, "/usr/bin/ninja", ["ninja", "-j2", "app"], {}),
    ev(5201, 5200, B, "/usr/bin/dash",
       ["/bin/sh", "-c", "/usr/bin/g++ @CMakeFiles/app.dir/src/main.cpp.o.rsp -MD -MT CMakeFiles/app.dir/src/main.cpp.o -MF CMakeFiles/app.dir/src/main.cpp.o.d -o CMakeFiles/app.dir/src/main.cpp.o -c /home/dev/proj/src/main.cpp"], {}),
    ev(5202, 5201, B, "/usr/bin/g++",
       ["/usr/bin/g++", "@CMakeFiles/app.dir/src/main.cpp.o.rsp", "-MD", "-MT", "CMakeFiles/app.dir/src/main.cpp.o",
        "-MF", "CMakeFiles/app.dir/src/main.cpp.o.d", "-o", "CMakeFiles/app.dir/src/main.cpp.o",
        "-c", S + "/src/main.cpp"], {}),
    ev(5203, 5202, B, GCCLIB + "/cc1plus",
       [GCCLIB + "/cc1plus", "-quiet", "-I", S + "/include", "-imultiarch", "x86_64-linux-gnu", "-MD",
        "CMakeFiles/app.dir/src/main.cpp.d", "-MF", "CMakeFiles/app.dir/src/main.cpp.o.d", "-MT",
        "CMakeFiles/app.dir/src/main.cpp.o", "-D_GNU_SOURCE", "-D", "APP_VERSION=\"1.2\"", S + "/src/main.cpp",
        "-quiet", "-dumpdir", "CMakeFiles/app.dir/src/", "-dumpbase", "main.cpp.cpp", "-dumpbase-ext", ".cpp",
        "-mtune=generic", "-march=x86-64", "-O2", "-std=gnu++17", "-fasynchronous-unwind-tables",
        "-o", TMP + "/ccLq0a1N.s"], CXXENV),
    ev(5204, 5202, B, "/usr/bin/as",
       ["as", "-I", S + "/include", "--64", "-o", "CMakeFiles/app.dir/src/main.cpp.o", TMP + "/ccLq0a1N.s"], CXXENV),
    # static library from an object list in a response file, then ranlib, in one shell line
    ev(5210, 5200, B, "/usr/bin/dash",
       ["/bin/sh", "-c", ": && /usr/bin/cmake -E rm -f libutil.a && /usr/bin/ar qc libutil.a  @CMakeFiles/util.dir/objects1.rsp && /usr/bin/ranlib libutil.a && :"], {}),
    ev(5211, 5210, B, "/usr/bin/cmake", ["/usr/bin/cmake", "-E", "rm", "-f", "libutil.a"], {}),
    ev(5212, 5210, B, "/usr/bin/ar", ["/usr/bin/ar", "qc", "libutil.a", "@CMakeFiles/util.dir/objects1.rsp"], {}),
    ev(5213, 5210, B, "/usr/bin/ranlib", ["/usr/bin/ranlib", "libutil.a"], {}),
    # link with the object list in a response file
    ev(5220, 5200, B, "/usr/bin/dash",
       ["/bin/sh", "-c", ": && /usr/bin/g++ -O2 @CMakeFiles/app.dir/objects1.rsp -o app  libutil.a && :"], {}),
    ev(5221, 5220, B, "/usr/bin/g++",
       ["/usr/bin/g++", "-O2", "@CMakeFiles/app.dir/objects1.rsp", "-o", "app", "libutil.a"], {}),
    ev(5222, 5221, B, GCCLIB + "/collect2",
       ld_args(GCCLIB + "/collect2", "app", ["CMakeFiles/app.dir/src/main.cpp.o", "libutil.a", "-lstdc++", "-lm"],
               TMP + "/ccXe7Wq0.res"),
       {"COLLECT_GCC": "/usr/bin/g++", "COLLECT_LTO_WRAPPER": GCCLIB + "/lto-wrapper",
        "OFFLOAD_TARGET_NAMES": "nvptx-none:amdgcn-amdhsa", "OFFLOAD_TARGET_DEFAULT": "1",
        "COLLECT_GCC_OPTIONS": "'-O2' '-o' 'app' '-shared-libgcc' '-mtune=generic' '-march=x86-64'"}),
]
dump("kwtrace-02-ninja-response-files.jsonl",
     [{"version": 101}, {"creator": "kwinject, version 2023.4.0 (hand-written sample)"}, {"env": ENV2}], t2)
rsp = os.path.join(out, "kwtrace-02-files", "CMakeFiles")
os.makedirs(os.path.join(rsp, "app.dir", "src"), exist_ok=True)
os.makedirs(os.path.join(rsp, "util.dir"), exist_ok=True)
with open(os.path.join(rsp, "app.dir", "src", "main.cpp.o.rsp"), "w") as f:
    f.write('-I/home/dev/proj/include -DAPP_VERSION=\\"1.2\\" -O2 -std=gnu++17\n')
with open(os.path.join(rsp, "app.dir", "objects1.rsp"), "w") as f:
    f.write("CMakeFiles/app.dir/src/main.cpp.o\n")
with open(os.path.join(rsp, "util.dir", "objects1.rsp"), "w") as f:
    f.write("CMakeFiles/util.dir/src/strutil.cpp.o CMakeFiles/util.dir/src/fmt.cpp.o\n")

# ---------------------------------------------------------------------------------------
# 3. kwwrap-style trace from a distributed build: no parent_id keys, ids from two hosts collide,
#    launcher invocations (distcc, ccache), awkward argv (spaces, quotes, non-ASCII), removed vars.
# ---------------------------------------------------------------------------------------
D = "/srv/ci/ws/fw"
ENV3 = {"CCACHE_DIR": "/srv/ci/.ccache", "DISTCC_HOSTS": "localhost/2", "HOME": "/srv/ci",
        "LANG": "C.UTF-8", "PATH": "/opt/arm/bin:/usr/bin:/bin", "USER": "ci"}
t3 = [
    ev(731, None, D + "/drivers", "/opt/arm/bin/arm-none-eabi-gcc",
       ["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-Os", "-DBOARD=\"rev B\"", "-I../inc",
        "-I../third party/cmsis", "-c", "uart driver.c", "-o", "uart driver.o"],
       {"DISTCC_HOSTS": "build1/8 build2/8"}, with_parent=False),
    ev(732, None, D + "/drivers", "/usr/bin/distcc",
       ["distcc", "-j", "8", "arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-Os", "-I../inc", "-c",
        "spi.c", "-o", "spi.o"],
       {"DISTCC_HOSTS": "build1/8 build2/8"}, with_parent=False),
    # same id 732 again: a different host of the distributed build reused the pid
    ev(732, None, D + "/app", "/usr/bin/ccache",
       ["ccache", "arm-none-eabi-g++", "-mcpu=cortex-m4", "-std=gnu++17", "-fno-exceptions", "-I../inc",
        "-c", "ünïcode_menu.cpp", "-o", "ünïcode_menu.o"],
       {"CCACHE_DIR": None, "CCACHE_NOHASHDIR": "1"}, with_parent=False),
    ev(740, None, D + "/app", "/opt/arm/bin/arm-none-eabi-gcc",
       ["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-specs=nano.specs", "-Wl,-Map=fw.map",
        "-T", "../ld/stm32f4.ld", "-o", "fw.elf", "main.o", "ünïcode_menu.o", "../drivers/uart driver.o",
        "../drivers/spi.o", "-lm"],
       {"LANG": None}, with_parent=False),
    ev(741, None, D + "/app", "/opt/arm/bin/arm-none-eabi-objcopy",
       ["arm-none-eabi-objcopy", "-O", "binary", "fw.elf", "fw.bin"], {}, with_parent=False),
]
dump("kwtrace-03-kwwrap-no-parent.jsonl",
     [{"version": 101}, {"creator": "kwwrap, version 2023.4.0 (hand-written sample)"}, {"env": ENV3}], t3)
print("wrote samples to", out)
