"""`wb kernel`: placeholder until its module lands."""

from workbench.cli._common import new_app

app = new_app("kernel commands")
