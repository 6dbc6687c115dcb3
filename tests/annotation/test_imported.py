"""Unchanged files are not imported again (annotation.imported): a rerun skips them and says
so, a changed file is imported, --force reads everything again, a failed import records nothing."""
import json
import shutil

import pytest
from django.core.management.base import CommandError

from annotation.imported import file_sha256
from annotation.models import ImportedFile, Item

from .conftest import FIXTURES, run

RELEASE = FIXTURES / "dialtom-release"
POOL = FIXTURES / "dialtom-pool"

pytestmark = pytest.mark.django_db


def _copy(tmp_path, *directories):
    for directory in directories:
        for source in directory.glob("*.json"):
            shutil.copy(source, tmp_path)
    return tmp_path


def test_rerun_skips_unchanged_files_and_says_so(tmp_path):
    directory = _copy(tmp_path, RELEASE)
    names = sorted(p.name for p in directory.glob("*.json"))
    _, first = run("import_dialtom", directory)
    assert first["unchanged"] == [] and first["created"]["items"] > 0
    assert sorted(ImportedFile.objects.values_list("name", flat=True)) == names
    assert ImportedFile.objects.get(name=names[0]).sha256 == file_sha256(directory / names[0])

    out, second = run("import_dialtom", directory)
    assert second["unchanged"] == names and second["files"] == [] and second["created"]["items"] == 0
    assert "unchanged since imported, skipped" in out and "--force" in out
    assert ImportedFile.objects.count() == len(names)


def test_a_changed_file_is_imported_and_the_others_skipped(tmp_path):
    directory = _copy(tmp_path, RELEASE)
    run("import_dialtom", directory)
    name = "MI_retrospective_verified.sample.json"
    records = json.loads((directory / name).read_text())
    new = json.loads(json.dumps(records[0]))
    new["id"] = "7, 7"
    new["ctx"] = [*new["ctx"][:-1], new["ctx"][-1] + " Something new."]
    (directory / name).write_text(json.dumps([*records, new]))
    _, report = run("import_dialtom", directory)
    assert report["files"] == [name] and name not in report["unchanged"] and len(report["unchanged"]) >= 1
    assert report["created"]["contexts"] == 1 and Item.objects.filter(item_id__startswith="mi-s0007-w07").exists()
    assert ImportedFile.objects.filter(name=name).count() == 2  # both versions


def test_force_reads_again(tmp_path):
    directory = _copy(tmp_path, RELEASE)
    run("import_dialtom", directory)
    Item.objects.filter(variant="counterfactual").delete()
    _, report = run("import_dialtom", directory, "--force")
    assert report["unchanged"] == [] and report["created"]["counterfactual"] > 0


def test_options_that_change_the_import_are_part_of_the_key(tmp_path):
    directory = _copy(tmp_path, POOL)
    run("import_dialtom", directory, "--batch", "one")
    _, report = run("import_dialtom", directory, "--batch", "two")
    assert report["unchanged"] == [] and report["files"]


def test_a_failed_import_records_nothing(tmp_path):
    directory = _copy(tmp_path, RELEASE)
    name = "MI_retrospective_verified.sample.json"
    records = json.loads((directory / name).read_text())
    records[0]["id"] = "not an id"
    (directory / name).write_text(json.dumps(records))
    with pytest.raises(CommandError):
        run("import_dialtom", directory, "--strict")
    assert not ImportedFile.objects.exists() and not Item.objects.exists()
    # without --strict the dirty file is imported but not recorded: its problems are listed again next time
    run("import_dialtom", directory)
    assert name not in set(ImportedFile.objects.values_list("name", flat=True)) and ImportedFile.objects.exists()
    _, again = run("import_dialtom", directory)
    assert again["files"] == [name] and again["skipped"]
