"""Offline stand-in for the ``get-pip.py`` bootstrap script that ``ansible-test`` downloads.

``ansible-test sanity`` creates a virtual environment per test and bootstraps pip into it with a
script fetched from ansible's CI file server, which machines without general internet access
cannot reach. ``make`` installs this file as ansible-test's cached copy of that script
(``~/.ansible/test/cache/get_pip_<version>.py``). Like get-pip.py it installs pip and then runs
``pip install`` with the arguments it was given; the pip itself comes from the interpreter's
bundled ``ensurepip`` wheel, and the requested pip version from the configured package index.
"""

import ensurepip
import os
import runpy
import ssl
import sys

GET_PIP_ONLY_OPTIONS = {"--no-setuptools", "--no-wheel"}


def main():
    args = [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY_OPTIONS]
    cafile = ssl.get_default_verify_paths().cafile
    if cafile and os.path.isfile(cafile) and not any(arg.startswith("--cert") for arg in args):
        # Trust what the interpreter trusts (the system store), not only pip's bundled certifi.
        args = ["--cert", cafile, *args]
    ensurepip.bootstrap(upgrade=False)
    sys.argv = ["pip", "install", *args]
    runpy.run_module("pip", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
