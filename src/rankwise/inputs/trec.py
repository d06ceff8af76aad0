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
their name). A plain file of single-space-separated lines is split by one streaming, multi-threaded
Polars scan; any other file is read in blocks of about 16 MiB, split by Polars (or, for blanks other
than single spaces, comments and blank lines, by a regular expression). There is no Python loop over
lines and no copy of the whole text: a 100M-line run needs memory for its columns. A run's qid
and tag are held as one integer per row while it is checked and ordered; a file already grouped by
query with scores descending (the usual layout) only has its tied documents sorted.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import mmap
import os
import stat

import polars as pl

from rankwise.errors import (
    DuplicateItemError,
    InputFileError,
    ParameterError,
    did_you_mean,
)

__all__ = ["read_qrels", "read_trec_run"]

_BLOCK = 16 << 20
_HEAD = 1 << 20  # the start of a plain file, tested before it is scanned whole
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


_NOT_SIMPLE = (b"\t", b"\r", b"\x0b", b"\x0c")  # blanks other than the space: the regular expression's job


def _fast(block: bytes, n_fields: int, exact: bool) -> pl.DataFrame | None:
    """The block's first ``n_fields`` fields when every line is ``n_fields`` single-space-separated
    fields (and, unless ``exact``, perhaps more): Polars' CSV reader splits it. None when any line is
    otherwise (tabs, runs of spaces, blank lines, comments): the caller then splits by regular expression."""
    if any(c in block for c in _NOT_SIMPLE):
        return None
    rows = block.count(b"\n")
    if exact and block.count(b" ") != (n_fields - 1) * rows:
        return None  # with the null checks below: exactly n_fields - 1 spaces on every line
    df = _split(block, n_fields, exact)
    return df if df is not None and df.height == rows else None


def _split(block: bytes, n_fields: int, exact: bool) -> pl.DataFrame | None:
    """``block`` split at single spaces by Polars' CSV reader, its first ``n_fields`` fields
    (``exact``: no more); None when a line has an empty field (a run of spaces, a leading blank, a
    blank line), too few or (``exact``) too many fields, or starts with '#'."""
    read = n_fields + 1 if exact else n_fields  # exact: one more column, which must stay empty
    df = pl.read_csv(io.BytesIO(block), columns=list(range(read)), **_csv_options(n_fields))
    nulls = df.null_count().row(0)
    if any(nulls[:n_fields]) or (exact and nulls[n_fields] != df.height):
        return None
    if df.select(pl.col("f0").str.starts_with("#").any()).item():
        return None
    return df


def _csv_options(n_fields: int, types: dict | None = None) -> dict:
    """Polars' CSV reader as a splitter at single spaces: fields f0, f1, ... as strings (or as
    ``types`` says, e.g. {"f4": pl.Float64}), no quoting."""
    schema = {f"f{i}": (types or {}).get(f"f{i}", pl.String) for i in range(n_fields + 1)}
    return {"separator": " ", "has_header": False, "quote_char": None, "truncate_ragged_lines": True,
            "schema": schema, "missing_columns": "insert",
            "extra_columns": "ignore"}  # without it, a first line of n_fields + 2 fields is a SchemaError


def _whole_file(path: str, n_fields: int, exact: bool, fields: list, convert: tuple,
                types: dict | None = None) -> pl.DataFrame | None:
    """A plain file's ``fields`` (expressions on f0, f1, ...), then ``convert``, from one streaming,
    multi-threaded Polars scan of the whole file, when its first lines pass :func:`_fast`'s test and
    no line holds a tab, CR, VT, FF or NUL; otherwise (a compressed file, any other line, text that is
    not UTF-8, a field of ``types`` the reader cannot parse as its type) None, and the caller reads it
    block by block. ``types`` are parsed by the reader itself (``convert`` then casts to the same type:
    no work), which saves holding each field as text first."""
    stream, kind = _open(path)
    with stream:
        if kind is not None:
            return None
        if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
            return None
        head = stream.read(_HEAD)
        cut = head.rfind(b"\n") + 1
        try:
            if cut == 0 or b"\x00" in head or _fast(head[:cut], n_fields, exact) is None:
                return None
        except pl.exceptions.PolarsError:  # e.g. not UTF-8: the block reader says where
            return None
        with mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as text:
            if any(text.find(c) >= 0 for c in (*_NOT_SIMPLE, b"\x00")):
                return None
    # the checks of _split, row by row within the scan, so the skipped fields are never held
    bad = pl.any_horizontal(pl.col(f"f{i}").is_null() for i in range(n_fields)) | pl.col("f0").str.starts_with("#")
    if exact:
        bad = bad | pl.col(f"f{n_fields}").is_not_null()
    # a str (a bytes path would be read as CSV text), absolute, not globbed: the file named as it is
    scan = pl.scan_csv(os.fsdecode(os.path.abspath(path)), glob=False, **_csv_options(n_fields, types))
    scan = scan.select(*fields, bad.alias("\x00bad"))
    try:
        df = (scan.with_columns(*convert) if convert else scan).collect(engine="streaming")
    except pl.exceptions.PolarsError:  # e.g. not UTF-8, or "abc" for a Float64: the block reader says where
        return None
    if df.get_column("\x00bad").any():
        return None
    return df.drop("\x00bad")


def _parse(path, regex: str, names: list[str], what: str, fmt: str, *, keep: bool = False,
           convert: tuple = (), types: dict | None = None) -> pl.DataFrame:
    """Every data line of the file split into ``names`` (strings), then ``convert`` (expressions,
    applied block by block so the text of a number is dropped early); with ``keep``, also each
    line's number ``line`` and text ``text`` (for error messages). ``types``: the fields (f0, f1, ...)
    the whole-file scan may parse straight into the type ``convert`` gives them."""
    path = os.fspath(path)
    run = what == "run"
    cols = ["f0", "f2", "f4", "f5"] if run else ["f0", "f2", "f3"]
    fields = [pl.col(c).alias(n) for c, n in zip(cols, names)]
    whole = None if keep else _whole_file(path, 6 if run else 4, not run, fields, convert, types)
    if whole is not None:
        return whole
    frames = []
    for first, block in _blocks(path):
        if b"\x00" in block:
            at = first + block[: block.index(b"\x00")].count(b"\n")
            raise InputFileError(f"{path!r} line {at}: a NUL byte; a TREC {what} file is text.",
                                 hint=f"Each line: {fmt}.")
        try:
            fast = None if keep else _fast(block, 6 if run else 4, exact=not run)
            if fast is not None:
                fast = fast.select(fields)
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
    """DuplicateItemError when a key repeats: per group of all keys but the last, a count of the last
    one's distinct values (exact; small hash tables, one per query), then, only if it finds a repeat,
    the exact rows, read again from the file with their line numbers and text. ``same_keys``: columns
    of ``df`` equal where ``keys`` are (e.g. an integer code for several string keys), checked in their place."""
    *groups, last = same_keys or keys
    if df.group_by(groups).agg(repeats=pl.col(last).n_unique() < pl.len()).get_column("repeats").any() is not True:
        return
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
    # qid and tag as Categorical while reading (4 bytes a row, not a string each): strings again at the end
    labels = pl.col("user", "run").cast(pl.Categorical)
    # -0.0 + 0.0 is +0.0: C compares -0.0 equal to 0.0, so they tie (and fall to the docno rule)
    df = _parse(path, _RUN_RX, names, "run", _RUN_FORMAT, convert=((score + 0.0).alias("score_text"), labels),
                types={"f4": pl.Float64})
    df = df.select("run", "user", "item", pl.col("score_text").alias("score"))
    if df.select((pl.col("score").is_null() | pl.col("score").is_nan()).any()).item():
        full = _parse(path, _RUN_RX, names, "run", _RUN_FORMAT, keep=True)
        bad = full.filter(score.is_null() | score.is_nan())
        raise _malformed(os.fspath(path), bad, "run", _RUN_FORMAT, "the score (5th field) is not a number")
    if tag is not None:
        tags = df.get_column("run").unique().cast(pl.String).sort().to_list()
        if tag not in tags:
            raise ParameterError(
                f"tag={tag!r}: {os.fspath(path)!r} holds no run with that tag (its tags: {tags[:20]}).",
                hint=did_you_mean(tag, tags) + "Pass one of the file's tags, or tag=None for every run.")
        df = df.filter(pl.col("run") == tag)
    def reparse():
        full = _parse(path, _RUN_RX, names, "run", _RUN_FORMAT, keep=True)
        return full if tag is None else full.filter(pl.col("run") == tag)

    queries, query, stretches = _query_codes(df)
    df = df.select(query.alias("query"), "item", "score").rechunk()  # run and user: from `queries`
    _check_duplicates(os.fspath(path), df, ["run", "user", "item"], "run", reparse, same_keys=["query", "item"])
    df = _trec_eval_order(df, one_stretch_per_query=stretches == queries.height)
    query = df.get_column("query")
    # each query is one stretch of rows: rank = row - the stretch's first row + 1
    row = pl.int_range(pl.len(), dtype=pl.Int64)
    rank = row - pl.when(_changes("query")).then(row).forward_fill() + 1
    return pl.DataFrame([queries.get_column("run").gather(query), queries.get_column("user").gather(query),
                         df.get_column("item"), df.select(rank.alias("rank")).to_series(), df.get_column("score")])


def _changes(column: str) -> pl.Expr:
    """True on each row where ``column`` differs from the row before (and on the first row)."""
    return (pl.col(column) != pl.col(column).shift(1)).fill_null(True)


def _query_codes(df: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series, int]:
    """The queries, one (run, user) row each in byte order; each row's query as its number there
    (UInt32); the number of stretches of rows with equal (run, user). Worked out on the stretches,
    one per query in the usual file: only their first rows are sorted."""
    stretch = df.select(pl.struct("run", "user").rle_id()).to_series()
    firsts = df.select("run", "user").with_columns(stretch=stretch).filter(_changes("stretch"))
    firsts = firsts.with_columns(pl.col("run", "user").cast(pl.String)).sort("run", "user")
    firsts = firsts.with_columns(query=pl.struct("run", "user").rle_id())
    queries = firsts.filter(_changes("query")).select("run", "user")
    return queries, firsts.sort("stretch").get_column("query").gather(stretch), firsts.height


def _trec_eval_order(df: pl.DataFrame, one_stretch_per_query: bool) -> pl.DataFrame:
    """``df`` (query, item, score) in trec_eval's order: query code, score descending, docno descending.

    The usual file (each query one stretch of rows, scores descending) keeps its rows but for the
    documents of tied scores, sorted by docno stretch by stretch, and its queries put in order by a
    stable sort on their code; nothing moves when it is already in order. Any other file is sorted
    on all three columns."""
    query, score, item = pl.col("query"), pl.col("score"), pl.col("item")
    descending = ((query != query.shift(1)) | (score <= score.shift(1))).fill_null(True).all()
    if not (one_stretch_per_query and df.select(descending).item()):
        return df.sort(["query", "score", "item"], descending=[False, True, True], maintain_order=False)
    rows = pl.int_range(df.height, dtype=pl.UInt32, eager=True).alias("row")  # where each output row comes from
    ties = df.select(pl.struct("query", "score").rle_id().alias("tie"), "item").with_columns(rows)
    tied_to_previous = pl.col("tie") == pl.col("tie").shift(1)
    if ties.select((tied_to_previous & (item > item.shift(1))).any()).item():
        ties = ties.filter((tied_to_previous | tied_to_previous.shift(-1)).fill_null(False))
        by_docno = ties.select(pl.col("row").gather(pl.arg_sort_by(["tie", "item"], descending=[False, True])))
        # the tied rows keep their places; each stretch of ties takes its rows in docno order
        rows = rows.scatter(ties.get_column("row"), by_docno.get_column("row"))
    del ties
    if not df.select((query >= query.shift(1)).fill_null(True).all()).item():
        rows = rows.gather(df.select(pl.arg_sort_by("query", maintain_order=True)).to_series())
    if rows.is_sorted():  # a permutation: sorted is no move
        return df
    return df.select(pl.all().gather(rows))


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
