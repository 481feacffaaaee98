"""The registries of named parts: a part is found by its exact name, a name is registered once,
and an unknown name is refused with the known ones."""

import pytest

from awrsr.errors import UnknownNameError
from awrsr.registry import Registry


def test_a_part_is_found_by_its_exact_name_only():
    reg = Registry("widget")
    assert reg.register("plain")(int) is int  # the decorator gives the part back unchanged
    reg.register("fancy")(float)
    assert reg.get("plain") is int and reg.get("fancy") is float
    assert "plain" in reg and "Plain" not in reg and "plai" not in reg
    with pytest.raises(UnknownNameError, match=r"^unknown widget 'Plain'; known: fancy, plain; did you mean 'plain'\?$"):
        reg.get("Plain")
    with pytest.raises(UnknownNameError, match=r"^unknown widget 'gadget'; known: fancy, plain; a part of another "
                                               r"package needs that package installed \(a plugin\)$"):
        reg.get("gadget")
    assert reg.names() == ["fancy", "plain"]
    assert reg.origin("plain") is None  # awrsr's own part, not a plugin's


def test_a_name_registered_while_a_plugin_loads_records_the_plugin(monkeypatch):
    from awrsr import plugins

    reg = Registry("widget")
    monkeypatch.setattr(plugins, "_loading", "widget-plugin 0.3")
    reg.register("plugged")(int)
    monkeypatch.setattr(plugins, "_loading", None)
    reg.register("own")(float)
    assert (reg.origin("plugged"), reg.origin("own")) == ("widget-plugin 0.3", None)


def test_a_name_registered_twice_is_refused_and_the_first_part_kept():
    """A second part under a taken name (a plugin, a copy-pasted decorator) would silently replace
    the first: every config naming it would train the other part."""
    reg = Registry("widget")
    reg.register("plain")(int)
    with pytest.raises(ValueError, match="^widget 'plain' is registered twice$"):
        reg.register("plain")(float)
    assert reg.get("plain") is int
