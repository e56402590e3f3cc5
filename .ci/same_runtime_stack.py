"""Fail if installing the test extra changed the version of a package a user's install has.

Usage: ``python .ci/same_runtime_stack.py FREEZE_AFTER_USER_INSTALL``.
"""
import subprocess
import sys


def versions(lines):
    pins = {}
    for line in lines:
        name, sep, version = line.strip().partition("==")
        if sep:
            pins[name.lower().replace("_", "-")] = version
    return pins


before = versions(open(sys.argv[1], encoding="utf-8"))
after = versions(subprocess.run([sys.executable, "-m", "pip", "freeze"], capture_output=True, text=True,
                                check=True).stdout.splitlines())
changed = {name: (old, after.get(name)) for name, old in before.items() if after.get(name) != old}
if changed:
    print("the test extra changed runtime dependencies: "
          + ", ".join(f"{n} {old} -> {new}" for n, (old, new) in sorted(changed.items())), file=sys.stderr)
    sys.exit(1)
print(f"same runtime stack for users and tests: {len(before)} packages unchanged")
