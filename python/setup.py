"""Puts libtattler.so inside the package, so the wheel needs nothing else at run time.

The library is $KUBE_TATTLER_BUILD_LIB when set (build_wheel.sh sets it),
else built here by ../ffi/install.sh --build-only: cargo's `dist` profile,
stripped, its exports checked, as `make install` builds it. The wheel is a
platform wheel (py3-none-linux_x86_64): any Python 3, one machine type;
$KUBE_TATTLER_WHEEL_PLATFORM names another platform tag, such as the
manylinux_2_34_x86_64 the release's glibc floor allows (dist/wheel.sh finds it
with objdump and has auditwheel confirm it). An editable install (pip install -e) carries no library: the package finds the
checkout's target/debug or target/release one.
"""

import os
import re
import shutil
import subprocess
import sys

from setuptools import Distribution, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
LIB_NAME = "libtattler.dylib" if sys.platform == "darwin" else "libtattler.so"


def built_library():
    given = os.environ.get("KUBE_TATTLER_BUILD_LIB")
    if given:
        if not os.path.isfile(given):
            sys.exit("kube-tattler: KUBE_TATTLER_BUILD_LIB=%s: no such file" % given)
        return given
    install = os.path.join(REPO, "ffi", "install.sh")
    if not os.path.isfile(install):
        sys.exit(
            "kube-tattler: building needs tattler's repository around python/ (ffi/install.sh builds "
            "libtattler.so), or KUBE_TATTLER_BUILD_LIB naming a libtattler.so"
        )
    out = subprocess.run([install, "--build-only"], check=True, stdout=subprocess.PIPE, text=True).stdout
    m = re.search(r" and (\S+/libtattler\.(?:so|dylib))$", out.strip())
    if not m:
        sys.exit("kube-tattler: ffi/install.sh --build-only did not say where the library is:\n" + out)
    return m.group(1)


class BuildPy(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        dest = os.path.join(self.build_lib, "kube_tattler", LIB_NAME)
        shutil.copyfile(built_library(), dest)
        os.chmod(dest, 0o755)


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True  # it carries a shared library: a platform wheel, installed to platlib


class BdistWheel(bdist_wheel):
    def get_tag(self):
        # ctypes, no extension module: any Python 3, no ABI, this platform.
        return "py3", "none", os.environ.get("KUBE_TATTLER_WHEEL_PLATFORM") or super().get_tag()[2]


setup(distclass=BinaryDistribution, cmdclass={"build_py": BuildPy, "bdist_wheel": BdistWheel})
