"""Parts from other packages: attention mechanisms, refinements, backbones and losses that a plugin
registers, found through the ``awrsr.parts`` entry-point group.

A package declares, in its pyproject.toml::

    [project.entry-points."awrsr.parts"]
    my_refinement = "my_package.refinement"

and ``my_package/refinement.py`` registers its parts as awrsr's own files do
(``@REFINEMENTS.register("mine")``). Installed beside awrsr, the name works in every config and
command (``--model.refine mine``), a saved model that uses it loads, a run records which
package made its parts, and awrsr's shared tests, run with the plugin installed, test it.

The plugins load when a registry is asked for a name awrsr does not ship, or for all its names
(a listing, the shared tests), after awrsr's own parts: a run of awrsr's parts never imports
them, and a plugin cannot replace a shipped part (it fails to load, named). Setting
AWRSR_DISABLE_PLUGINS=1 loads none (as pytest's PYTEST_DISABLE_PLUGIN_AUTOLOAD does).
"""

from __future__ import annotations

import os
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from awrsr.errors import PluginError

ENTRY_POINT_GROUP = "awrsr.parts"
DISABLE_VARIABLE = "AWRSR_DISABLE_PLUGINS"

_loaded: dict[str, str] | None = None  # entry-point name -> its source ("distribution version"), once loaded
_loading: str | None = None  # the source of the plugin being imported: what its registrations record
_failure: PluginError | None = None  # a plugin that failed fails every later lookup too


def plugins_disabled() -> bool:
    return os.environ.get(DISABLE_VARIABLE, "").strip().lower() not in ("", "0", "false", "no")


def load_plugins() -> dict[str, str]:
    """Import every installed plugin, once per process; returns ``{entry point: "distribution
    version"}`` of those loaded. A plugin that cannot be imported, or that registers a name
    already taken, is a ``PluginError`` naming it."""
    global _loaded, _loading, _failure
    if _failure is not None:
        raise _failure
    if _loaded is not None:  # also while loading: a plugin that looks a name up sees the parts so far
        return _loaded
    _loaded = {}
    if plugins_disabled():
        return _loaded
    # awrsr's own parts are in already: a registry's module is reached through its package, whose
    # __init__ imports every part file (losses.py registers its own)
    for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        _loading = source(entry)
        try:
            entry.load()
        except KeyboardInterrupt:  # not the plugin's fault: the next lookup loads them all again
            _loaded = None
            raise
        except (Exception, SystemExit) as err:  # an ImportError, a name registered twice, the plugin's own error or exit
            where = entry.value if entry.dist is None else f"{entry.value}, from {_loading}"
            _failure = PluginError(f"plugin {entry.name!r} ({where}) failed to load: "
                                   f"{type(err).__name__}: {err}; uninstall it, or set {DISABLE_VARIABLE}=1 to load no plugin")
            raise _failure from err
        finally:
            _loading = None
        _loaded[entry.name] = source(entry)
    return _loaded


def loading_plugin() -> str | None:
    """The source of the plugin being imported now, for ``Registry.register`` to record; None
    for awrsr's own parts."""
    return _loading


def source(entry: EntryPoint) -> str:
    """"<distribution> <version>", or the entry point's module where it has no distribution."""
    dist = entry.dist
    return f"{dist.name} {dist.version}" if dist is not None else entry.value


def plugin_parts(model: Any, train: Any) -> dict[str, str]:
    """``{"model.refine": "distribution version", ...}`` for the parts of a run's ``model``
    (ModelConfig) and ``train`` (TrainConfig) that plugins registered, for its metrics.json."""
    from awrsr.models.registry import MODELS
    from awrsr.nn.attention import ATTENTIONS
    from awrsr.nn.losses import LOSSES
    from awrsr.nn.refine import REFINEMENTS

    chosen = (("model.name", MODELS, model.name), ("model.attention", ATTENTIONS, model.attention),
              ("model.refine", REFINEMENTS, model.refine), ("train.loss", LOSSES, train.loss))
    return {key: origin for key, registry, name in chosen if (origin := registry.origin(name)) is not None}
