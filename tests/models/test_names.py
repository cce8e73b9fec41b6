"""One model display name: the engine's display_name carries the public-mode rule the dashboard names models by."""
from __future__ import annotations

from biascore.models.names import display_name


def test_display_name_under_the_settings_public_mode(monkeypatch):
    path = "/srv/models/my-model.gguf"
    assert display_name(path) == "my-model"  # a snapshot, an export: never the location
    assert display_name(path, public=False) == path
    monkeypatch.delenv("BIASCORE_PUBLIC", raising=False)
    assert display_name(path, public=None) == path  # a private dashboard shows the name as given
    monkeypatch.setenv("BIASCORE_PUBLIC", "1")
    assert display_name(path, public=None) == "my-model"
    assert display_name("org/model", public=None) == "org/model"  # a hub id is no location


def test_the_kits_model_label_is_that_one_function(monkeypatch):
    from views.kit.models import model_label

    monkeypatch.setenv("BIASCORE_PUBLIC", "1")
    assert model_label.func is display_name and model_label("/srv/models/folder/") == "folder"
    monkeypatch.delenv("BIASCORE_PUBLIC")
    assert model_label("/srv/models/folder/") == "/srv/models/folder/"
