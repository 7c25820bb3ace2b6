"""torch.return_types: the named tuples that ops giving several tensors return (`x.max(1)`,
`torch.sort`, `torch.linalg.qr`), each named as torch's (`type(r).__name__` is "max") and printed as
torch's structseqs, which training scripts log (`print(out.max(1))`): one line per field, under
torch's module name."""
import collections


def _result_type(name, fields):
    """A namedtuple type called name whose repr is torch's: torch.return_types.NAME(\\nFIELD=repr,\\n...)."""
    def __repr__(self):
        return f"torch.return_types.{name}(\n" + ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self)) + ")"
    base = collections.namedtuple(name, fields)
    return type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__module__": __name__})


max = _result_type("max", ["values", "indices"])
min = _result_type("min", ["values", "indices"])
aminmax = _result_type("aminmax", ["min", "max"])
sort = _result_type("sort", ["values", "indices"])
topk = _result_type("topk", ["values", "indices"])
cummax = _result_type("cummax", ["values", "indices"])
cummin = _result_type("cummin", ["values", "indices"])
median = _result_type("median", ["values", "indices"])
nanmedian = _result_type("nanmedian", ["values", "indices"])
kthvalue = _result_type("kthvalue", ["values", "indices"])
mode = _result_type("mode", ["values", "indices"])
frexp = _result_type("frexp", ["mantissa", "exponent"])
histogram = _result_type("histogram", ["hist", "bin_edges"])
histogramdd = _result_type("histogramdd", ["hist", "bin_edges"])
linalg_lu_factor = _result_type("linalg_lu_factor", ["LU", "pivots"])
linalg_lu_factor_ex = _result_type("linalg_lu_factor_ex", ["LU", "pivots", "info"])
linalg_lu = _result_type("linalg_lu", ["P", "L", "U"])
linalg_inv_ex = _result_type("linalg_inv_ex", ["inverse", "info"])
linalg_slogdet = _result_type("linalg_slogdet", ["sign", "logabsdet"])
linalg_solve_ex = _result_type("linalg_solve_ex", ["result", "info"])
triangular_solve = _result_type("triangular_solve", ["solution", "cloned_coefficient"])
linalg_cholesky_ex = _result_type("linalg_cholesky_ex", ["L", "info"])
linalg_qr = _result_type("linalg_qr", ["Q", "R"])
geqrf = _result_type("geqrf", ["a", "tau"])
linalg_eigh = _result_type("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_svd = _result_type("linalg_svd", ["U", "S", "Vh"])
svd = _result_type("svd", ["U", "S", "V"])
linalg_lstsq = _result_type("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
