"""What every command starts from: the settings file (``local.settings.json``, read as
``func start`` reads it), the data directory, and the services built from them."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from memnet.local_settings import load_local_settings
from memnet.settings import LOCAL_SETTINGS

if TYPE_CHECKING:
    from memnet.bootstrap import Services


def add_settings_options(command: argparse.ArgumentParser) -> None:
    """``--settings`` and ``--data-dir``, which :func:`load` reads."""
    command.add_argument(
        "--settings",
        default=str(LOCAL_SETTINGS),
        help="values file read like `func start` does (environment wins; default: the "
        "app's local.settings.json)",
    )
    command.add_argument(
        "--data-dir",
        help="overrides MEMNET_DATA_DIR (a relative path is from the working directory)",
    )


def load(args: argparse.Namespace) -> Services:
    """The services from the settings file and the environment. Paths in settings are
    from the app's root (memnet.settings); a path typed on the command line is from the
    working directory, as a shell user means it."""
    load_local_settings(args.settings)
    if args.data_dir:
        os.environ["MEMNET_DATA_DIR"] = str(Path(args.data_dir).resolve())
    from memnet import auth_wiring, bootstrap
    from memnet.settings import Settings

    return bootstrap.build(auth_wiring.with_vault_secrets(Settings.from_env()))
