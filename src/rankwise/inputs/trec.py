"""TREC files in: runs (``qid Q0 docno rank score tag``) and qrels (``qid iter docno rel``).

Both readers follow trec_eval 10.0 (usnistgov/trec_eval, ``get_trec_results.c``, ``get_qrels.c``,
``form_res_rels.c``), which is the definition:

* fields are separated by any run of blanks (space, tab, CR, VT, FF); a line whose first non-blank
  character is ``#`` is a comment; blank lines are skipped;
* a run's ``Q0`` and ``rank`` fields are ignored; fields after ``tag`` are ignored. Documents are
  ranked per query by score descending, equal scores by docno descending (C ``strcmp``: byte order),
  and the rank column of the file plays no part;
* a qrels line has exactly four fields; ``rel`` is an integer and may be negative (trec_eval: -1 is
  "in the pool but not judged"); every row is kept;
* the same docno twice in one query (of one run, or of the qrels) is an error in trec_eval
  ("duplicate docs"); here a :class:`rankwise.errors.DuplicateItemError` naming the lines.

Where this reader is stricter or kinder than trec_eval, on purpose: trec_eval reads a score with
``atof`` and a rel with ``atol`` (``"abc"`` silently becomes 0), here a field that is not a number
(or a NaN score, or a non-integer rel) is a :class:`rankwise.errors.InputFileError` naming the line;
trec_eval keeps only the last line's tag and treats the file as one run, here each tag is a run;
trec_eval rejects a blank qrels line and reads a second consecutive ``#`` qrels line as data, here
both are skipped; trec_eval checks duplicates only in the queries it evaluates, here in every query.

Files may be plain or compressed with gzip, bzip2, xz or zstd (told by their first bytes, whatever
their name). They are read in blocks of about 16 MiB and split by Polars, with no Python loop over
lines, so a 100M-line run needs memory for its columns, not for its text.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os

import polars as pl

from rankwise.errors import (
    DuplicateItemError,
    InputFileError,
    ParameterError,
    did_you_mean,
)

__all__ = ["read_qrels", "read_trec_run"]

_BLOCK = 16 << 20
_SHOW = 5  # offending lines shown in an error

_B = r"[\t\x0B\x0C\r ]"  # C isspace() minus the newline
_F = r"([^\t\x0B\x0C\r ]+)"  # one field
_S = r"[^\t\x0B\x0C\r ]+"  # one ignored field
# qid Q0 docno rank score tag [anything]
_RUN_RX = rf"^{_B}*{_F}{_B}+{_S}{_B}+{_F}{_B}+{_S}{_B}+{_F}{_B}+{_F}(?:{_B}.*)?$"
# qid iter docno rel
_QRELS_RX = rf"^{_B}*{_F}{_B}+{_S}{_B}+{_F}{_B}+{_F}{_B}*$"
_SKIP_RX = rf"^{_B}*(?:#.*)?$"  # a blank line or a comment

_RUN_FORMAT = "qid Q0 docno rank score tag (six whitespace-separated fields; more are ignored)"
_QRELS_FORMAT = "qid iter docno rel (four whitespace-separated fields, rel an integer)"

_MAGIC = {
    b"\x1f\x8b": "gzip",
    b"BZh": "bzip2",
    b"\xfd7zXZ\x00": "xz",
    b"\x28\xb5\x2f\xfd": "zstd",
}


def _open(path: str):
    """A binary stream of the file's text, decompressed when its first bytes say it is compressed."""
    try:
        raw = open(path, "rb")  # noqa: SIM115 (returned to the caller, closed there)
    except FileNotFoundError:
        raise InputFileError(f"{path!r} does not exist.", hint="Check the path.") from None
    except IsADirectoryError:
        raise InputFileError(f"{path!r} is a directory, not a TREC file.", hint="Give the file's path.") from None
    except OSError as exc:
        raise InputFileError(f"{path!r} cannot be read: {exc}.", hint="Check the file's permissions.") from None
    head = raw.read(6)
    raw.seek(0)
    kind = next((k for magic, k in _MAGIC.items() if head.startswith(magic)), None)
    if kind is None:
        return raw, None
    if kind == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb"), kind
    if kind == "bzip2":
        return bz2.BZ2File(raw, mode="rb"), kind
    if kind == "xz":
        return lzma.LZMAFile(raw, mode="rb"), kind
    import pyarrow as pa  # a dependency of rankwise; its zstd codec streams

    return pa.CompressedInputStream(pa.PythonFile(raw, mode="r"), "zstd"), kind


def _blocks(path: str):
    """Yield (first line number, bytes) blocks of whole lines (the last may lack its newline)."""
    stream, kind = _open(path)
    line = 1
    rest = b""
    try:
        while True:
            try:
                data = stream.read(_BLOCK)
            except (OSError, EOFError, lzma.LZMAError, ValueError) as exc:
                raise InputFileError(
                    f"{path!r}: the {kind or 'file'} data cannot be read ({exc}).",
                    hint="The file looks truncated or corrupt; compress it again or give the plain text.",
                ) from None
            if not data:
                break
            data = rest + data
            cut = data.rfind(b"\n") + 1
            if cut == 0:  # one line longer than a block: keep reading
                rest = data
                continue
            block, rest = data[:cut], data[cut:]
            yield line, block
            line += block.count(b"\n")
        if rest:
            yield line, rest + b"\n"
    finally:
        stream.close()


def _fast(block: bytes, n_fields: int, exact: bool) -> pl.DataFrame | None:
    """The block's first ``n_fields`` fields when every line is ``n_fields`` single-space-separated
    fields (and, unless ``exact``, perhaps more): Polars' CSV reader splits it. None when any line is
    otherwise (tabs, runs of spaces, blank lines, comments): the caller then splits by regular expression."""
    if any(c in block for c in (b"\t", b"\r", b"\x0b", b"\x0c")):
        return None
    rows = block.count(b"\n")
    if exact and block.count(b" ") != (n_fields - 1) * rows:
        return None  # with the null checks below: exactly n_fields - 1 spaces on every line
    read = n_fields + 1 if exact else n_fields  # exact: one more column, which must stay empty
    schema = {f"f{i}": pl.String for i in range(n_fields + 1)}
    df = pl.read_csv(io.BytesIO(block), separator=" ", has_header=False, quote_char=None,
                     truncate_ragged_lines=True, schema=schema, missing_columns="insert",
                     columns=list(range(read)))
    nulls = df.null_count().row(0)  # an empty field (two spaces, a leading blank) or a short line
    if df.height != rows or any(nulls[:n_fields]) or (exact and nulls[n_fields] != rows):
        return None
    if df.select(pl.col("f0").str.starts_with("#").any()).item():
        return None
    return df


def _parse(path, regex: str, names: list[str], what: str, fmt: str, *, keep: bool = False,
           convert: tuple = ()) -> pl.DataFrame:
    """Every data line of the file split into ``names`` (strings), then ``convert`` (expressions,
    applied block by block so the text of a number is dropped early); with ``keep``, also each
    line's number ``line`` and text ``text`` (for error messages)."""
    path = os.fspath(path)
    run = what == "run"
    frames = []
    for first, block in _blocks(path):
        if b"\x00" in block:
            at = first + block[: block.index(b"\x00")].count(b"\n")
            raise InputFileError(f"{path!r} line {at}: a NUL byte; a TREC {what} file is text.",
                                 hint=f"Each line: {fmt}.")
        try:
            fast = None if keep else _fast(block, 6 if run else 4, exact=not run)
            if fast is not None:
                cols = ["f0", "f2", "f4", "f5"] if run else ["f0", "f2", "f3"]
                fast = fast.select(pl.col(c).alias(n) for c, n in zip(cols, names))
                frames.append(fast.with_columns(*convert) if convert else fast)
                continue
            lines = pl.read_csv(io.BytesIO(block), separator="\x00", has_header=False, quote_char=None,
                                schema={"text": pl.String}, truncate_ragged_lines=True)
        except pl.exceptions.ComputeError as exc:
            raise InputFileError(f"{path!r} (lines from {first}): not UTF-8 text ({exc}).",
                                 hint="Re-encode the file as UTF-8.") from None
        lines = (lines.with_row_index("line", offset=first)
                 .with_columns(pl.col("line").cast(pl.Int64), pl.col("text").fill_null(""))
                 .filter(~pl.col("text").str.contains(_SKIP_RX)))
        fields = lines.with_columns(
            pl.col("text").str.extract_groups(regex).struct.rename_fields(names).alias("\x00fields")
        ).unnest("\x00fields")
        bad = fields.filter(pl.col(names[0]).is_null())
        if bad.height:
            raise _malformed(path, bad, what, fmt, "wrong number of fields")
        fields = fields if keep else fields.select(names)
        if fields.height:
            frames.append(fields.with_columns(*convert) if convert else fields)
    if not frames:
        raise InputFileError(f"{path!r} holds no {what} lines (it is empty, or only blank lines and comments).",
                             hint=f"A TREC {what} file has one line per document: {fmt}.")
    return pl.concat(frames, rechunk=False)


def _malformed(path, bad: pl.DataFrame, what: str, fmt: str, why: str) -> InputFileError:
    shown = bad.head(_SHOW)
    rows = "\n".join(f"  line {n}: {t!r}" for n, t in zip(shown["line"], shown["text"]))
    more = f" (and {bad.height - _SHOW} more)" if bad.height > _SHOW else ""
    first = int(shown["line"][0])
    return InputFileError(f"{path!r}: malformed {what} line {first}{more}: {why}.", rows=rows,
                          hint=f"Each line of a TREC {what} file: {fmt}; '#' starts a comment line.")


def _check_duplicates(path, df: pl.DataFrame, keys: list[str], what: str, reparse,
                      same_keys: list[str] | None = None) -> None:
    """DuplicateItemError when a key repeats: a 64-bit hash count first (cheap), then, only if it
    finds a repeat, the exact rows, read again from the file with their line numbers and text.
    ``same_keys``: columns of ``df`` equal where ``keys`` are (e.g. an integer code for several
    string keys), checked in their place."""
    check = same_keys or keys
    hashes = pl.reduce(lambda a, b: a ^ b, [pl.col(c).hash(seed) for seed, c in enumerate(check, 1)])
    if df.select(hashes.n_unique()).item() == df.height:
        return
    if not df.select(pl.struct(check).is_duplicated().any()).item():
        return  # a hash collision, no repeat
    full = reparse()
    dup = full.filter(pl.struct(keys).is_duplicated()).sort([*keys, "line"])
    qid, doc = dup["user"][0], dup["item"][0]
    same = dup.filter((pl.col("user") == qid) & (pl.col("item") == doc))
    if "run" in keys:
        same = same.filter(pl.col("run") == dup["run"][0])
    shown = dup.head(2 * _SHOW)
    rows = "\n".join(f"  line {n}: {t!r}" for n, t in zip(shown["line"], shown["text"]))
    raise DuplicateItemError(
        f"{path!r}: docno {doc!r} appears more than once for query {qid!r} in the {what} file (lines "
        f"{', '.join(str(n) for n in same['line'])}); trec_eval stops there too ('duplicate docs').",
        rows=rows, hint="Keep one line per (query, document)" + (" and run tag." if what == "run" else "."))


def read_trec_run(path, *, tag: str | None = None) -> pl.DataFrame:
    """Read a TREC run file: ``qid Q0 docno rank score tag`` per line, plain or gzip/bz2/xz/zstd.

    Returns columns ``run`` (the tag), ``user`` (qid), ``item`` (docno), ``rank`` (1..n) and
    ``score`` (Float64), sorted by run, user, rank. Ranks are trec_eval's: score descending, ties
    by docno descending in byte order; the file's own rank column is ignored. Several tags make
    several runs; ``tag=`` keeps one. Raises :class:`~rankwise.errors.InputFileError` for a
    malformed line (naming it) or an empty file, and
    :class:`~rankwise.errors.DuplicateItemError` for a docno twice in one query of one run.
    """
    names = ["user", "item", "score_text", "run"]
    score = pl.col("score_text").cast(pl.Float64, strict=False)
    df = _parse(path, _RUN_RX, names, "run", _RUN_FORMAT, convert=(score.alias("score_text"),))
    df = df.select("run", "user", "item", pl.col("score_text").alias("score"))
    if df.select((pl.col("score").is_null() | pl.col("score").is_nan()).any()).item():
        full = _parse(path, _RUN_RX, names, "run", _RUN_FORMAT, keep=True)
        bad = full.filter(score.is_null() | score.is_nan())
        raise _malformed(os.fspath(path), bad, "run", _RUN_FORMAT, "the score (5th field) is not a number")
    if tag is not None:
        tags = df.get_column("run").unique().sort().to_list()
        if tag not in tags:
            raise ParameterError(
                f"tag={tag!r}: {os.fspath(path)!r} holds no run with that tag (its tags: {tags[:20]}).",
                hint=did_you_mean(tag, tags) + "Pass one of the file's tags, or tag=None for every run.")
        df = df.filter(pl.col("run") == tag)
    def reparse():
        full = _parse(path, _RUN_RX, names, "run", _RUN_FORMAT, keep=True)
        return full if tag is None else full.filter(pl.col("run") == tag)

    # -0.0 + 0.0 is +0.0: C compares -0.0 equal to 0.0, so they tie (and fall to the docno rule)
    df = df.with_columns(pl.col("score") + 0.0, _query_codes(df).alias("query"))
    _check_duplicates(os.fspath(path), df, ["run", "user", "item"], "run", reparse, same_keys=["query", "item"])
    df = _trec_eval_order(df)
    # each query is one stretch of rows: rank = row - the stretch's first row + 1
    row = pl.int_range(pl.len(), dtype=pl.Int64)
    first = _changes("query")
    rank = row - pl.when(first).then(row).forward_fill() + 1
    return df.select("run", "user", "item", rank.alias("rank"), "score")


def _changes(*columns: str) -> pl.Expr:
    """True on each row where any of ``columns`` differs from the row before (and on the first row)."""
    return pl.any_horizontal(pl.col(c) != pl.col(c).shift(1) for c in columns).fill_null(True)


def _query_codes(df: pl.DataFrame) -> pl.Series:
    """Each row's (run, user) as an integer, numbered in (run, user) byte order. Worked out on the
    stretches of rows with equal (run, user), one per query in the usual file: only their first rows
    are sorted."""
    new_stretch = _changes("run", "user")
    stretch = df.select(new_stretch.cum_sum().cast(pl.UInt32) - 1).to_series()
    firsts = df.filter(new_stretch).select("run", "user").with_row_index("stretch").sort("run", "user")
    codes = firsts.select("stretch", code=new_stretch.cum_sum().cast(pl.UInt32) - 1).sort("stretch")
    return codes.get_column("code").gather(stretch)


def _trec_eval_order(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` by query code, score descending, docno descending (trec_eval's order); untouched when
    already so (a file written in that order), else sorted on the integer code, the score and the docno."""
    same_query = pl.col("query") == pl.col("query").shift(1)
    score_before = pl.col("score").shift(1)
    in_order = ((pl.col("query") > pl.col("query").shift(1))
                | (same_query & ((pl.col("score") < score_before)
                                 | ((pl.col("score") == score_before) & (pl.col("item") < pl.col("item").shift(1))))))
    if df.select(in_order.fill_null(True).all()).item():
        return df
    return df.sort(["query", "score", "item"], descending=[False, True, True], maintain_order=False)


def read_qrels(path) -> pl.DataFrame:
    """Read a TREC qrels file: ``qid iter docno rel`` per line, plain or gzip/bz2/xz/zstd.

    Returns columns ``user`` (qid), ``item`` (docno) and ``relevance`` (Int64), one row per line in
    file order, every row kept (zero and negative levels too: what they mean is the measures'
    business). Raises :class:`~rankwise.errors.InputFileError` for a malformed line (naming it) or
    an empty file, and :class:`~rankwise.errors.DuplicateItemError` for a (qid, docno) judged twice.
    """
    names = ["user", "item", "rel_text"]
    rel = pl.col("rel_text").str.strip_prefix("+").cast(pl.Int64, strict=False)
    df = _parse(path, _QRELS_RX, names, "qrels", _QRELS_FORMAT, convert=(rel.alias("rel_text"),))
    df = df.select("user", "item", pl.col("rel_text").alias("relevance"))
    if df.get_column("relevance").null_count():
        full = _parse(path, _QRELS_RX, names, "qrels", _QRELS_FORMAT, keep=True)
        raise _malformed(os.fspath(path), full.filter(rel.is_null()), "qrels", _QRELS_FORMAT,
                         "the relevance (4th field) is not an integer")
    _check_duplicates(os.fspath(path), df, ["user", "item"], "qrels",
                      lambda: _parse(path, _QRELS_RX, names, "qrels", _QRELS_FORMAT, keep=True))
    return df.select("user", "item", "relevance")
