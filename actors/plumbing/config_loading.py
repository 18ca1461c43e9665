"""The settings from the environment: the variable each setting is read from, and
:func:`load_settings`, which reads them and reports an invalid value as a ``ConfigError``
naming its variable (the settings themselves: :class:`actors.plumbing.config.Settings`).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pydantic_settings.exceptions import SettingsError

from actors.core.errors import ConfigError
from actors.plumbing.config import ENV_PREFIX, Settings


def environment_variables() -> dict[str, str]:
    """The environment variable of every setting: ``{"FILE_EXPORT_DATA_DIR": "data_dir", …}``.

    The variable is the field's alias where it has one, else :data:`ENV_PREFIX` and the
    field's name in capitals (pydantic-settings matches either case). deploy/env.example
    and the README's table list exactly these (``tests/deploy/test_env_example.py``).
    """
    out = {}
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        out[alias if isinstance(alias, str) else ENV_PREFIX + name.upper()] = name
    return out


def load_settings(**overrides: Any) -> Settings:
    """Read settings from the environment (plus ``overrides`` by field name, for tests).

    Raises:
        ConfigError: a value is invalid; the message names the environment variable.
    """
    variable = {field: var for var, field in environment_variables().items()}
    aliases = {  # an aliased field is given by its alias, every other one by its name
        name: field.validation_alias
        for name, field in Settings.model_fields.items()
        if isinstance(field.validation_alias, str)
    }
    try:
        return Settings(**{aliases.get(k, k): v for k, v in overrides.items()})
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = ".".join(str(variable.get(str(p), p)) for p in err["loc"]) or "configuration"
            problems.append(f"{loc}: {err['msg']}")
        raise ConfigError("invalid configuration: " + "; ".join(problems)) from None
    except SettingsError as exc:
        raise ConfigError(f"invalid configuration: {exc}") from None
