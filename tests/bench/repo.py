"""A real git repository holding the benchmark's manifests, one commit per scenario."""

import subprocess
from pathlib import Path

import yaml

GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
}


class Repo:
    """Working tree + history of the generated manifests."""

    def __init__(self, path):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self._git("init", "-q", "-b", "main")

    def _git(self, *args):
        env = dict(GIT_ENV, PATH="/usr/bin:/bin:/usr/local/bin")
        return subprocess.run(["git", *args], cwd=self.path, env=env, check=True, capture_output=True, text=True).stdout

    def write(self, entries, message):
        """Make the tree hold exactly ``entries`` and commit; returns the commit id."""
        wanted = {e.path: e for e in entries}
        for old in self.path.rglob("*.yaml"):
            if str(old.relative_to(self.path)) not in wanted:
                old.unlink()
        for rel, entry in wanted.items():
            target = self.path / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            text = yaml.safe_dump(entry.manifest(), sort_keys=False)
            if not target.exists() or target.read_text() != text:
                target.write_text(text)
        self._git("add", "-A")
        self._git("commit", "-q", "--allow-empty", "-m", message)
        return self._git("rev-parse", "HEAD").strip()
