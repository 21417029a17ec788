"""Shared pytest setup for stacksync.k8s.

Makes ``ansible_collections.stacksync.k8s`` importable and visible to ``ansible-playbook``:

* ``STACKSYNC_COLLECTIONS_PATH`` (set by ``make test``) points at a collections root where the
  built tarball was installed, so tests exercise what users install;
* otherwise (a developer running ``pytest`` directly) a symlink to this checkout is made under
  ``build/dev-collections``.
"""

import contextlib
import os
import sys
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _collections_root():
    env = os.environ.get("STACKSYNC_COLLECTIONS_PATH")
    if env:
        return Path(env).resolve()
    root = REPO / "build" / "dev-collections"
    link = root / "ansible_collections" / "stacksync" / "k8s"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            link.symlink_to(REPO, target_is_directory=True)
    return root


COLLECTIONS_ROOT = _collections_root()
COLLECTION_DIR = COLLECTIONS_ROOT / "ansible_collections" / "stacksync" / "k8s"
if str(COLLECTIONS_ROOT) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS_ROOT))
os.environ["ANSIBLE_COLLECTIONS_PATH"] = str(COLLECTIONS_ROOT)
os.environ.setdefault("ANSIBLE_COLLECTIONS_SCAN_SYS_PATH", "false")
os.environ.setdefault("ANSIBLE_NOCOLOR", "1")
os.environ.setdefault("ANSIBLE_HOST_KEY_CHECKING", "false")
os.environ.setdefault("ANSIBLE_RETRY_FILES_ENABLED", "false")
os.environ.setdefault("ANSIBLE_LOCALHOST_WARNING", "false")
os.environ.setdefault("ANSIBLE_INVENTORY_UNPARSED_WARNING", "false")

pytest_plugins = ["tests.kubesim.pytest_plugin"]


@pytest.fixture(scope="module")
def admin(kube):
    """A client of the test cluster (``kube``: the simulator or a real server) with its admin kubeconfig,
    loaded as the modules load it; one per test module."""
    from tests.reliability import helpers as H

    client = H.client_for(kube.kubeconfig)
    yield client
    client.close()


@pytest.fixture
def ns(admin, request):
    """A namespace for one test, deleted after it: ``<NS_PREFIX of the test module>-<6 hex digits>``."""
    from tests.reliability import helpers as H

    name = f"{getattr(request.module, 'NS_PREFIX', 'test')}-{uuid.uuid4().hex[:6]}"
    H.create_namespace(admin, name)
    yield name
    H.delete_quietly(admin, "/api/v1/namespaces/" + name)
