"""The code's layout rules, checked on the source: no import circle inside tnet, no private name
imported from another module, no script imported by another, train.py without recipe tables."""
import ast
import functools
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tnet"


def module_name(path):
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def imports(path):
    """(module, names) for every import in the file, at any depth, relative ones resolved. Kept per
    path: several tests read the same files, and parsing and walking them is most of their time."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.append((module, [alias.name for alias in node.names]))
    return tuple(found)


def tnet_graph():
    """tnet's modules and, for each, the tnet modules it imports (`from . import x` names x)."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        edges = set()
        for module, names in imports(path):
            for target in [f"{module}.{n}" for n in names] + [module]:
                if target in modules and target != name:
                    edges.add(target)
                    break
        graph[name] = edges
    return graph


def test_no_import_circle_inside_tnet():
    """A package imports its submodules, so an edge from a package to its own child is no
    circle: only the children's imports of each other and of their parents count."""
    graph = tnet_graph()
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in graph[node]:
            if nxt.startswith(node + "."):
                continue
            if state.get(nxt) == "open":
                cycle = stack[stack.index(nxt):] + [nxt]
                raise AssertionError("import circle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"
    for node in sorted(graph):
        if node not in state:
            visit(node)


# torch's own module names, which scripts reach (`torch._dynamo.config`, `torch.utils._pytree`): tnet's packages
# import them
TORCH_PRIVATE_MODULES = {"_dynamo", "_inductor", "_pytree"}


def test_no_private_name_imported_from_another_module():
    bad = [f"{path.relative_to(ROOT)}: {module}.{n}" for path in PACKAGE.rglob("*.py")
           for module, names in imports(path) for n in names if n.startswith("_") and not n.startswith("__")
           and module.startswith("tnet") and n not in TORCH_PRIVATE_MODULES]
    assert not bad, bad


def test_no_script_imports_another():
    scripts = {"train", "bench"}
    bad = [f"{path.relative_to(ROOT)}: {module}" for folder in ("tests", "benchmarks", "tnet", "tools")
           for path in (ROOT / folder).rglob("*.py") for module, _ in imports(path) if module in scripts]
    bad += [f"{name}: {module}" for name in ("train.py", "bench.py") for module, _ in imports(ROOT / name)
            if module in scripts]
    assert not bad, bad


def test_train_py_defines_no_recipe_tables():
    tree = ast.parse((ROOT / "train.py").read_text())
    tables = [target.id for node in tree.body if isinstance(node, ast.Assign) for target in node.targets
              if isinstance(target, ast.Name) and isinstance(node.value, ast.Dict)]
    assert not tables, f"train.py defines tables {tables}: recipes live in tnet/recipes.py"


def test_pyproject_lists_every_package():
    """A non-editable install ships only the packages pyproject.toml names."""
    text = (ROOT / "pyproject.toml").read_text()
    listed = set(ast.literal_eval(text.split("packages = ", 1)[1].split("]", 1)[0] + "]"))
    packages = {module_name(p) for p in PACKAGE.rglob("__init__.py")}
    assert packages == listed, f"pyproject.toml lists {sorted(listed)}, the tree holds {sorted(packages)}"


def test_no_test_file_imports_another():
    """Shared test code lives in tests/helpers.py."""
    tests = {p.stem for p in (ROOT / "tests").glob("test_*.py")}
    bad = [f"{path.name}: {module}" for path in (ROOT / "tests").glob("*.py") for module, _ in imports(path)
           if module in tests]
    assert not bad, bad


# The packages the project depends on (README: triton, torch, numpy, tqdm; pytest, with pytest-xdist for -n, to test;
# matplotlib for plots), beside the standard library and the repository's own modules
DEPENDENCIES = {"torch", "triton", "numpy", "tqdm", "pytest", "xdist", "matplotlib"}
# Imported only where present: the tests skip without them (pytest.importorskip), and the maintainers' tool that
# decodes the data pack's JPEGs runs where Pillow is
OPTIONAL = {"tensorboard", "einops", "PIL"}


def test_imports_stay_within_the_dependencies():
    """No file imports a package that CI does not install (scipy in a ported script failed only there)."""
    import sys
    own = {p.stem for p in ROOT.glob("*.py")} | {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    own |= {p.stem for p in (ROOT / "tests").glob("*.py")} | {p.stem for p in (ROOT / "tools").glob("*.py")}
    allowed = DEPENDENCIES | OPTIONAL | set(sys.stdlib_module_names) | own | {"__main__"}
    found = {}
    for path in ROOT.rglob("*.py"):
        if any(part.startswith(".") for part in path.relative_to(ROOT).parts):
            continue
        for module, _ in imports(path):
            top = module.split(".")[0]
            if top and top not in allowed:
                found.setdefault(top, str(path.relative_to(ROOT)))
    assert not found, f"imports outside the dependencies: {found}"
