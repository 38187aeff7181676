"""The one test of generated PTX: every file a template renders (ptx_impl.generated) is checked in exactly as it
renders, deterministically; every other .ptx file in ptx_impl/kernels is hand-written, and every template module
is in the registry."""
import pytest

from ptx_impl import generated

FILES = generated.generated()


@pytest.mark.parametrize("file_name", sorted(FILES))
def test_checked_in_ptx_is_what_its_template_renders(file_name):
    module, render = FILES[file_name]
    text = render()
    assert (generated.KERNEL_DIR / file_name).read_text() == text, f"{file_name} is stale ({module}): run `make ptx`"
    assert render() == text  # deterministic


def test_the_registry_covers_every_template_and_no_hand_written_file():
    templates = {f"ptx_impl.{p.stem}" for p in generated.KERNEL_DIR.parent.glob("*_template.py")}
    assert set(generated.TEMPLATE_MODULES) == templates
    on_disk = {p.name for p in generated.KERNEL_DIR.glob("*.ptx")}
    assert set(FILES) <= on_disk and len(FILES) == 20  # 20 generated (rungs 6-12: one each), the others by hand


def test_regenerating_writes_the_same_bytes_and_check_finds_a_stale_file(tmp_path, capsys):
    written = generated.write_all(tmp_path)
    assert sorted(p.name for p in written) == sorted(FILES)
    assert all(p.read_text() == (generated.KERNEL_DIR / p.name).read_text() for p in written)
    assert generated.stale(tmp_path) == []
    victim = sorted(FILES)[0]
    (tmp_path / victim).write_text("// edited by hand\n")
    assert generated.stale(tmp_path) == [victim]


def test_the_template_refuses_a_tile_it_has_no_entry_for():
    from ptx_impl import gemm_fp8_ws_template as template

    with pytest.raises(ValueError, match="tokens=48"):
        template.render(False, 48)
