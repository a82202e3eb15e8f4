"""The README's example and the generated code it shows stay true."""

import importlib.util
import pathlib
import re

import adjoint

README = pathlib.Path(__file__).parent.parent / "README.md"


def test_readme_generated_source_is_what_adjoint_prints(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    example, shown = blocks[0], blocks[1]
    definition = example.split("\ndW, db")[0] + "\n"
    path = tmp_path / "model.py"
    path.write_text(definition)
    spec = importlib.util.spec_from_file_location("readme_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert adjoint.source(module.loss, wrt=(0, 1)) == shown
