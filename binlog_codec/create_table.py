"""The table map of a table, derived from its ``CREATE TABLE`` statement.

A backup image describes each table by the statement ``SHOW CREATE TABLE``
prints. :func:`table_map_of` turns that statement into the
:class:`~binlog_codec.table_map.TableMap` a server with
``binlog_row_metadata=FULL`` logs for the table, so that rows of a backup can
be read with the very decoder that reads rows events (see
:mod:`binlog_codec.snapshot_rows`).

What the server logs for each column (``Field::binlog_type`` and
``save_field_metadata``), and so what the table map gets:

* TINYINT/SMALLINT/MEDIUMINT/INT/BIGINT (BOOLEAN is TINYINT): their integer
  type; DECIMAL: NEWDECIMAL with precision and scale; FLOAT/DOUBLE with their
  pack length 4/8; BIT(n) with n bits; YEAR, marked unsigned;
* DATE: DATE; TIME/DATETIME/TIMESTAMP: TIME2/DATETIME2/TIMESTAMP2 with their
  fractional digits;
* CHAR(n)/BINARY(n): STRING, real type STRING, length n times the character
  set's bytes per character; VARCHAR(n)/VARBINARY(n): VARCHAR likewise;
  TINY/-/MEDIUM/LONG TEXT and BLOB: BLOB with pack length 1/2/3/4;
  ENUM/SET: STRING with real type ENUM/SET and the length of their index or
  bit mask (1-2 and 1-4 or 8 bytes);
* GEOMETRY and its subtypes: GEOMETRY, pack length 4, binary collation;
* JSON: MySQL's JSON type (pack length 4); on MariaDB an alias of
  ``LONGTEXT CHARSET utf8mb4 COLLATE utf8mb4_bin``;
* MariaDB's INET4 (BINARY(4)), INET6 and UUID (BINARY(16)) and VECTOR(n)
  (VARBINARY(4n)); MySQL's VECTOR(n): VECTOR, pack length 4, n dimensions.

The optional metadata of WL#4618 follows: signedness of numeric columns,
collation of character and ENUM/SET columns (each table's most used collation
as DEFAULT_CHARSET where that is shorter than one collation per column, as the
server decides), names, ENUM/SET values as bytes of the column's character set,
geometry types, the primary key with prefix lengths (a table without one uses
its first UNIQUE key over NOT NULL columns without prefixes, as the server
does) and, on MySQL, column visibility. MariaDB adds a hidden column
``DB_ROW_HASH_n`` (BIGINT UNSIGNED, nullable) per ``UNIQUE ... USING HASH``
key, after the table's own columns; it is in the table map too.

MariaDB's ``SHOW CREATE TABLE`` result is utf8mb3: an ENUM or SET value with a
character outside the Basic Multilingual Plane (an emoji) comes out with ``?``
in its place, and so does its value in the table map derived from it.

Unsupported syntax raises ``ValueError`` naming the line and what was expected.

The tokenizer and the grammar of column definitions (:func:`column_spec`, which keeps
each column's DEFAULT, generated expression and AUTO_INCREMENT too) and of the statement's
head and body (:func:`table_head`, :func:`table_body`) are also those of
:mod:`binlog_codec.ddl`, which reads the DDL statements of QUERY events.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Callable

from . import charsets
from .table_map import BINARY_COLLATION, ENUM_SET_TYPES, GEOMETRY_TYPES, NUMERIC_TYPES, Column, ColumnType, TableMap

log = logging.getLogger(__name__)

FLAVOURS = ("mysql", "mariadb")

# -- default collation of each character set (SHOW CHARACTER SET) ----------------
#
# Most character sets default to <charset>_general_ci; these do not.
_DEFAULT_COLLATIONS = {
    "big5": "big5_chinese_ci",
    "binary": "binary",
    "cp932": "cp932_japanese_ci",
    "dec8": "dec8_swedish_ci",
    "eucjpms": "eucjpms_japanese_ci",
    "euckr": "euckr_korean_ci",
    "gb18030": "gb18030_chinese_ci",
    "gb2312": "gb2312_chinese_ci",
    "gbk": "gbk_chinese_ci",
    "hp8": "hp8_english_ci",
    "latin1": "latin1_swedish_ci",
    "latin5": "latin5_turkish_ci",
    "sjis": "sjis_japanese_ci",
    "swe7": "swe7_swedish_ci",
    "tis620": "tis620_thai_ci",
    "ujis": "ujis_japanese_ci",
}
_MYSQL_DEFAULT_COLLATIONS = {"utf8mb4": "utf8mb4_0900_ai_ci"}
_CHARSET_ALIASES = {"utf8": "utf8mb3"}


def collation_named(name: str, flavour: str) -> charsets.Collation:
    """The collation called ``name`` (``utf8_*`` read as ``utf8mb3_*``) on a ``flavour`` server."""
    wanted = name.lower()
    if wanted.startswith("utf8_"):
        wanted = "utf8mb3_" + wanted[len("utf8_"):]
    for found in charsets.collations(flavour).values():
        if found.name == wanted:
            return found
    raise charsets.UnknownCollationError(f"unknown collation {name!r} for {flavour}")


def default_collation(charset: str, flavour: str) -> charsets.Collation:
    """The collation a column of ``charset`` gets when none is named."""
    charset = _CHARSET_ALIASES.get(charset.lower(), charset.lower())
    overrides = _MYSQL_DEFAULT_COLLATIONS if flavour == "mysql" else {}
    name = overrides.get(charset) or _DEFAULT_COLLATIONS.get(charset) or f"{charset}_general_ci"
    try:
        return collation_named(name, flavour)
    except charsets.UnknownCollationError:
        raise charsets.UnknownCollationError(f"unknown character set {charset!r} for {flavour}") from None


# -- tokens ---------------------------------------------------------------------

_TOKEN_PATTERN = r"""
      (?P<space>\s+)
    | (?P<version_open>/\*!\d*)          # /*!80023 INVISIBLE */: its text is part of the statement
    | (?P<comment>/\*.*?\*/|--(?=\s|$)[^\n]*|\#[^\n]*)   # /* */, "-- " and "#" comments
    | (?P<comment_close>\*/)
    | (?P<ident>`(?:[^`]|``)*`)
    | (?P<string>'(?:[^'{escape}]|{escaped}'')*')
    | (?P<dquoted>"(?:[^"{escape}]|{escaped}"")*")
    | (?P<word>[A-Za-z0-9_$@.\u0080-\U0010FFFF]+)   # unquoted names may have any character above ASCII
    | (?P<op>.)
    """
# Strings with backslash escapes, and without them (sql_mode NO_BACKSLASH_ESCAPES).
_TOKENS = {
    escapes: re.compile(
        _TOKEN_PATTERN.format(escape="\\\\" if escapes else "", escaped="\\\\.|" if escapes else ""),
        re.VERBOSE | re.DOTALL,
    )
    for escapes in (True, False)
}
_ESCAPES = {"0": "\0", "n": "\n", "r": "\r", "t": "\t", "b": "\b", "Z": "\x1a", "%": "\\%", "_": "\\_"}


@dataclass(frozen=True)
class Token:
    """One token: ``kind`` (ident, string, word, op), its ``text`` (unquoted for ident and string),
    the line it starts on, whether whitespace precedes it and its offset in the statement."""

    kind: str
    text: str
    line: int
    spaced: bool
    offset: int = 0

    def is_word(self, *words: str) -> bool:
        return self.kind == "word" and self.text.upper() in words


def _is_digits(token: Token) -> bool:
    """A word of ASCII digits (``str.isdigit`` alone would take ``²``)."""
    return token.kind == "word" and token.text.isascii() and token.text.isdigit()


def _unquoted_string(quoted: str, escapes: bool) -> str:
    """A quoted SQL string: a doubled quote is a quote, backslash escapes as MySQL reads them
    (unless not ``escapes``)."""
    quote, body, out, i = quoted[0], quoted[1:-1], [], 0
    while i < len(body):
        char = body[i]
        if char == "\\" and escapes and i + 1 < len(body):
            out.append(_ESCAPES.get(body[i + 1], body[i + 1]))
            i += 2
        elif char == quote and body[i + 1 : i + 2] == quote:
            out.append(quote)
            i += 2
        else:
            out.append(char)
            i += 1
    return "".join(out)


def tokens(statement: str, *, ansi_quotes: bool = True, backslash_escapes: bool = True) -> list[Token]:
    """The tokens of ``statement``; comments dropped, the text of ``/*!NNNNN ... */`` kept.
    A double-quoted text is an identifier with ``ansi_quotes`` (sql_mode ANSI_QUOTES), else a
    string; backslashes in strings escape unless not ``backslash_escapes`` (NO_BACKSLASH_ESCAPES)."""
    found: list[Token] = []
    line, spaced = 1, True
    for match in _TOKENS[backslash_escapes].finditer(statement):
        kind, text, offset = match.lastgroup, match.group(), match.start()
        if kind == "ident":
            found.append(Token("ident", text[1:-1].replace("``", "`"), line, spaced, offset))
        elif kind == "dquoted" and ansi_quotes:
            found.append(Token("ident", text[1:-1].replace('""', '"'), line, spaced, offset))
        elif kind in ("string", "dquoted"):
            found.append(Token("string", _unquoted_string(text, backslash_escapes), line, spaced, offset))
        elif kind in ("word", "op"):
            found.append(Token(kind, text, line, spaced, offset))
        spaced = kind in ("space", "comment", "version_open", "comment_close") or (kind == "op" and text == ",")
        line += text.count("\n")
    return found


def _quoted(text: str, quote: str) -> str:
    escaped = text.replace("\\", "\\\\") if quote == "'" else text
    return quote + escaped.replace(quote, quote * 2) + quote


def sql_text(items: list[Token]) -> str:
    """``items`` written back as SQL: identifiers in backquotes, strings in single quotes, a
    space where the statement had one (so that ``tokens(sql_text(items))`` gives the same texts)."""
    parts = []
    for token in items:
        if parts and token.spaced:
            parts.append(" ")
        if token.kind == "ident":
            parts.append(_quoted(token.text, "`"))
        elif token.kind == "string":
            parts.append(_quoted(token.text, "'"))
        else:
            parts.append(token.text)
    return "".join(parts)


# -- reading tokens ----------------------------------------------------------------


class DefinitionError(ValueError):
    """Text the grammar does not read; ``token`` is where (None for an empty statement)."""

    def __init__(self, message: str, token: Token | None) -> None:
        super().__init__(message)
        self.token = token


class Reader:
    """A cursor over the tokens of one definition; errors name its line."""

    def __init__(self, items: list[Token], lines: list[str], what: str) -> None:
        self.items, self.pos, self.lines, self.what = items, 0, lines, what

    def peek(self, ahead: int = 0) -> Token | None:
        index = self.pos + ahead
        return self.items[index] if index < len(self.items) else None

    def next(self, expected: str) -> Token:
        token = self.peek()
        if token is None:
            raise self.error(f"expected {expected}, found the end of the {self.what}")
        self.pos += 1
        return token

    def take_word(self, *words: str) -> bool:
        """Consume the next token when it is one of ``words`` (upper case)."""
        token = self.peek()
        if token is not None and token.is_word(*words):
            self.pos += 1
            return True
        return False

    def take_op(self, op: str) -> bool:
        token = self.peek()
        if token is not None and token.kind == "op" and token.text == op:
            self.pos += 1
            return True
        return False

    def expect_word(self, *words: str) -> None:
        token = self.next(" or ".join(words))
        if not token.is_word(*words):
            raise self.error(f"expected {' or '.join(words)}, found {token.text!r}", token)

    def expect_op(self, op: str) -> None:
        token = self.next(repr(op))
        if token.kind != "op" or token.text != op:
            raise self.error(f"expected {op!r}, found {token.text!r}", token)

    def name(self, what: str) -> str:
        token = self.next(what)
        if token.kind not in ("ident", "word"):
            raise self.error(f"expected {what}, found {token.text!r}", token)
        return token.text

    def number(self, what: str) -> int:
        token = self.next(what)
        if not _is_digits(token):
            raise self.error(f"expected {what} (a number), found {token.text!r}", token)
        return int(token.text)

    def group(self) -> list[Token]:
        """The tokens of a parenthesized group whose ``(`` is next, without the outer parentheses."""
        self.expect_op("(")
        start, depth = self.pos, 1
        while depth:
            token = self.next("')'")
            if token.kind == "op" and token.text in "()":
                depth += 1 if token.text == "(" else -1
        return self.items[start : self.pos - 1]

    def where(self, token: Token | None) -> str:
        """``line N ('its text')`` of ``token``."""
        number = token.line if token else 1
        text = self.lines[number - 1].strip() if 0 < number <= len(self.lines) else ""
        return f"line {number} ({text!r})"

    def error(self, message: str, token: Token | None = None) -> DefinitionError:
        token = token or self.peek() or (self.items[-1] if self.items else None)
        return DefinitionError(f"{self.where(token)}: {message}", token)


def split_at_commas(items: list[Token]) -> list[list[Token]]:
    """``items`` split at the commas outside parentheses."""
    parts: list[list[Token]] = [[]]
    depth = 0
    for token in items:
        if token.kind == "op" and token.text in "()":
            depth += 1 if token.text == "(" else -1
        if depth == 0 and token.kind == "op" and token.text == ",":
            parts.append([])
        else:
            parts[-1].append(token)
    return [part for part in parts if part]


# -- column types ------------------------------------------------------------------


@dataclass
class ColumnSpec:
    """A column definition as written: type name and arguments, and the attributes that matter."""

    name: str
    where: str  # line N ('its text')
    type_name: str
    arguments: list[Token]
    unsigned: bool = False
    charset: str | None = None
    collation: str | None = None
    not_null: bool = False
    invisible: bool = False
    primary_key: bool = False
    default: list[Token] | None = None  # the tokens after DEFAULT
    auto_increment: bool = False
    generated: list[Token] | None = None  # the expression of GENERATED ALWAYS AS (...)
    binary: bool = False  # the BINARY attribute: the _bin collation of the column's character set


@dataclass
class Table:
    """What a CREATE TABLE statement says, before it becomes a table map."""

    name: str
    columns: list[ColumnSpec] = field(default_factory=list)
    primary_key: list[tuple[str, int]] = field(default_factory=list)
    unique_keys: list[list[tuple[str, int]]] = field(default_factory=list)
    hash_keys: int = 0  # MariaDB's UNIQUE ... USING HASH keys
    charset: str | None = None
    collation: str | None = None
    database: str | None = None  # as the statement qualifies the name
    temporary: bool = False
    if_not_exists: bool = False
    or_replace: bool = False


INTEGER_TYPES = {
    "TINYINT": ColumnType.TINY, "BOOL": ColumnType.TINY, "BOOLEAN": ColumnType.TINY, "INT1": ColumnType.TINY,
    "SMALLINT": ColumnType.SHORT, "INT2": ColumnType.SHORT,
    "MEDIUMINT": ColumnType.INT24, "INT3": ColumnType.INT24, "MIDDLEINT": ColumnType.INT24,
    "INT": ColumnType.LONG, "INTEGER": ColumnType.LONG, "INT4": ColumnType.LONG,
    "BIGINT": ColumnType.LONGLONG, "INT8": ColumnType.LONGLONG,
}
_FRACTIONAL = {"TIME": ColumnType.TIME2, "DATETIME": ColumnType.DATETIME2, "TIMESTAMP": ColumnType.TIMESTAMP2}
_TEXTS = {"TINYTEXT": 1, "TEXT": 2, "MEDIUMTEXT": 3, "LONGTEXT": 4}
_BLOBS = {"TINYBLOB": 1, "BLOB": 2, "MEDIUMBLOB": 3, "LONGBLOB": 4}
_GEOMETRIES = {name: code for code, name in GEOMETRY_TYPES.items()} | {"GEOMCOLLECTION": 7}
_MARIADB_BINARY_TYPES = {"INET4": 4, "INET6": 16, "UUID": 16}


def _arguments(spec: ColumnSpec) -> list[int]:
    """The numbers in a type's parentheses: ``decimal(10,2)`` gives [10, 2]."""
    numbers = [token for token in spec.arguments if not (token.kind == "op" and token.text == ",")]
    if not all(_is_digits(token) for token in numbers):
        raise ValueError(f"{spec.where}: column {spec.name!r}: expected numbers in {spec.type_name}(...)")
    return [int(token.text) for token in numbers]


def _argument(spec: ColumnSpec, default: int | None) -> int:
    numbers = _arguments(spec)
    if not numbers and default is None:
        raise ValueError(f"{spec.where}: column {spec.name!r}: {spec.type_name} needs a length")
    return numbers[0] if numbers else default


def _blob_pack_length(size: int) -> int:
    """TEXT(n)/BLOB(n): the smallest BLOB type that holds ``size`` bytes."""
    return next(width for width in (1, 2, 3, 4) if size < 1 << 8 * width)


class _Builder:
    """Builds the :class:`Column` of each :class:`ColumnSpec` of one table."""

    def __init__(self, table: Table, flavour: str) -> None:
        self.flavour = flavour
        self.table = table

    def table_collation(self, spec: ColumnSpec) -> charsets.Collation:
        """The table's COLLATE, else the default collation of its DEFAULT CHARSET."""
        if self.table.collation:
            return collation_named(self.table.collation, self.flavour)
        if self.table.charset:
            return default_collation(self.table.charset, self.flavour)
        raise ValueError(
            f"{spec.where}: column {spec.name!r} names no character set and the table no DEFAULT CHARSET"
        )

    def collation(self, spec: ColumnSpec) -> charsets.Collation:
        """COLLATE, else the default of CHARACTER SET (its ``_bin`` collation with the BINARY
        attribute), else the table's collation."""
        if spec.collation:
            return collation_named(spec.collation, self.flavour)
        found = default_collation(spec.charset, self.flavour) if spec.charset else self.table_collation(spec)
        return collation_named(f"{found.charset}_bin", self.flavour) if spec.binary else found

    def column(self, index: int, spec: ColumnSpec) -> Column:
        name = spec.type_name
        column = Column(index, 0, 0, not spec.not_null, name=spec.name)
        build = self._builder(name)
        if build is None:
            raise ValueError(f"{spec.where}: column {spec.name!r}: unsupported type {name}")
        build(column, spec)
        if column.real_type in NUMERIC_TYPES:
            column.unsigned = spec.unsigned or column.real_type == ColumnType.YEAR
        if self.flavour == "mysql":
            column.visible = not spec.invisible
        return column

    def _builder(self, name: str) -> Callable[[Column, ColumnSpec], None] | None:
        if name in INTEGER_TYPES:
            return lambda c, s: self._set(c, INTEGER_TYPES[name])
        if name in _FRACTIONAL:
            return lambda c, s: self._set(c, _FRACTIONAL[name], fsp=_argument(s, 0))
        if name in _TEXTS or name in _BLOBS:
            return self._blob
        if name in _GEOMETRIES:
            return lambda c, s: self._set(
                c, ColumnType.GEOMETRY, pack_length=4, collation_id=BINARY_COLLATION, geometry_type=_GEOMETRIES[name]
            )
        if name in _MARIADB_BINARY_TYPES and self.flavour == "mariadb":
            return lambda c, s: self._set(
                c, ColumnType.STRING, length=_MARIADB_BINARY_TYPES[name], collation_id=BINARY_COLLATION
            )
        return {
            "DECIMAL": self._decimal, "DEC": self._decimal, "NUMERIC": self._decimal, "FIXED": self._decimal,
            "FLOAT": self._float,
            "DOUBLE": lambda c, s: self._set(c, ColumnType.DOUBLE, pack_length=8),
            "REAL": lambda c, s: self._set(c, ColumnType.DOUBLE, pack_length=8),
            "BIT": lambda c, s: self._set(c, ColumnType.BIT, length=_argument(s, 1)),
            "YEAR": lambda c, s: self._set(c, ColumnType.YEAR),
            "DATE": lambda c, s: self._set(c, ColumnType.DATE),
            "CHAR": lambda c, s: self._characters(c, s, ColumnType.STRING, _argument(s, 1)),
            "VARCHAR": lambda c, s: self._characters(c, s, ColumnType.VARCHAR, _argument(s, None)),
            "BINARY": lambda c, s: self._bytes(c, ColumnType.STRING, _argument(s, 1)),
            "VARBINARY": lambda c, s: self._bytes(c, ColumnType.VARCHAR, _argument(s, None)),
            "ENUM": self._enum,
            "SET": self._set_type,
            "JSON": self._json,
            "VECTOR": self._vector,
        }.get(name)

    @staticmethod
    def _set(column: Column, type_code: int, **metadata) -> None:
        column.type_code = column.real_type = type_code
        for attribute, value in metadata.items():
            setattr(column, attribute, value)

    def _decimal(self, column: Column, spec: ColumnSpec) -> None:
        numbers = _arguments(spec) or [10]
        self._set(column, ColumnType.NEWDECIMAL, precision=numbers[0], scale=numbers[1] if len(numbers) > 1 else 0)

    def _float(self, column: Column, spec: ColumnSpec) -> None:
        """FLOAT, FLOAT(M,D): 4 bytes; FLOAT(p) with p above 24 is a DOUBLE."""
        numbers = _arguments(spec)
        if len(numbers) == 1 and numbers[0] > 24:
            self._set(column, ColumnType.DOUBLE, pack_length=8)
        else:
            self._set(column, ColumnType.FLOAT, pack_length=4)

    def _characters(self, column: Column, spec: ColumnSpec, type_code: int, chars: int) -> None:
        found = self.collation(spec)
        self._set(column, type_code, length=chars * found.maxlen, collation_id=found.id)

    def _bytes(self, column: Column, type_code: int, length: int) -> None:
        self._set(column, type_code, length=length, collation_id=BINARY_COLLATION)

    def _blob(self, column: Column, spec: ColumnSpec) -> None:
        name = spec.type_name
        found = self.collation(spec) if name in _TEXTS else charsets.collation(BINARY_COLLATION, self.flavour)
        numbers = _arguments(spec)
        pack_length = _blob_pack_length(numbers[0] * found.maxlen) if numbers else {**_TEXTS, **_BLOBS}[name]
        self._set(column, ColumnType.BLOB, pack_length=pack_length, collation_id=found.id)

    def _labels(self, spec: ColumnSpec, found: charsets.Collation) -> list[str]:
        """ENUM/SET values as the table map holds them: the bytes of the column's character set,
        read as UTF-8 (bytes that are not UTF-8 kept as surrogates)."""
        labels = []
        for token in spec.arguments:
            if token.kind == "string":
                raw = token.text.encode("utf-8") if found.codec is None else charsets.encode(token.text, found.id, self.flavour)
                labels.append(raw.decode("utf-8", "surrogateescape"))
            elif not (token.kind == "op" and token.text == ","):
                raise ValueError(f"{spec.where}: column {spec.name!r}: expected quoted {spec.type_name} values")
        return labels

    def _enum(self, column: Column, spec: ColumnSpec) -> None:
        found = self.collation(spec)
        labels = self._labels(spec, found)
        self._set(column, ColumnType.STRING, length=1 if len(labels) < 256 else 2, collation_id=found.id,
                  enum_values=labels)
        column.real_type = ColumnType.ENUM

    def _set_type(self, column: Column, spec: ColumnSpec) -> None:
        found = self.collation(spec)
        labels = self._labels(spec, found)
        size = (len(labels) + 7) // 8
        self._set(column, ColumnType.STRING, length=8 if size > 4 else size, collation_id=found.id, set_values=labels)
        column.real_type = ColumnType.SET

    def _json(self, column: Column, spec: ColumnSpec) -> None:
        if self.flavour == "mysql":
            self._set(column, ColumnType.JSON, pack_length=4)
        else:
            binary_utf8 = collation_named("utf8mb4_bin", self.flavour)
            self._set(column, ColumnType.BLOB, pack_length=4, collation_id=binary_utf8.id)

    def _vector(self, column: Column, spec: ColumnSpec) -> None:
        """MySQL: VECTOR(n), 2048 dimensions by default; MariaDB: VARBINARY of n floats."""
        if self.flavour == "mysql":
            dimension = _argument(spec, 2048)
            self._set(column, ColumnType.VECTOR, pack_length=4, collation_id=BINARY_COLLATION,
                      vector_dimension=dimension)
        else:
            self._bytes(column, ColumnType.VARCHAR, 4 * _argument(spec, None))


# -- definitions -------------------------------------------------------------------

# The words that begin a key or constraint rather than a column definition.
KEY_WORDS = ("PRIMARY", "UNIQUE", "KEY", "INDEX", "FULLTEXT", "SPATIAL", "CONSTRAINT", "FOREIGN", "CHECK", "PERIOD",
             "VECTOR")
_SKIPPED_ATTRIBUTES = ("VISIBLE",)
_ATTRIBUTES_WITH_VALUE = ("COLUMN_FORMAT", "STORAGE", "SRID", "REF_SYSTEM_ID", "ENGINE_ATTRIBUTE",
                          "SECONDARY_ENGINE_ATTRIBUTE", "COMMENT")


def _adjacent_op(reader: Reader, *ops: str) -> bool:
    token = reader.peek()
    return token is not None and not token.spaced and token.kind == "op" and token.text in ops


def value_tokens(reader: Reader) -> list[Token]:
    """The tokens of one DEFAULT or ON UPDATE value: a literal (with a sign, a charset introducer
    or a b/x prefix), a function call, or an expression in parentheses."""
    start = reader.pos
    _skip_value(reader)
    return reader.items[start : reader.pos]


def _skip_value(reader: Reader) -> None:
    token = reader.peek()
    if token is not None and token.kind == "op" and token.text == "(":
        reader.group()
        return
    while reader.take_op("-") or reader.take_op("+"):
        pass
    token = reader.next("a value")
    if token.kind == "op":
        raise reader.error(f"expected a value, found {token.text!r}", token)
    while _adjacent_op(reader, "+", "-") and token.text[-1:] in "eE":  # 1e+10
        reader.next("an exponent sign")
        token = reader.next("an exponent")
    after = reader.peek()
    if token.kind == "word" and after is not None and not after.spaced and after.kind == "op" and after.text == "(":
        reader.group()  # current_timestamp(), nextval(...)
    elif token.kind == "word" and after is not None and after.kind == "string" and (
        not after.spaced or token.text.startswith("_") or token.is_word("DATE", "TIME", "TIMESTAMP")
    ):
        token = reader.next("a string")  # _utf8mb4'x', b'101', x'FF', DATE '2024-01-01'
    while token.kind == "string" and reader.peek() is not None and reader.peek().kind == "string":
        token = reader.next("a string")  # 'a' 'b' is 'ab'


def _generated(reader: Reader) -> list[Token]:
    """``[GENERATED ALWAYS] AS (expr) [VIRTUAL|STORED|PERSISTENT]`` after GENERATED or AS: expr."""
    if reader.take_word("ALWAYS"):
        reader.expect_word("AS")
    expression = reader.group()
    reader.take_word("VIRTUAL", "STORED", "PERSISTENT")
    return expression


def _attribute(reader: Reader, spec: ColumnSpec) -> None:
    """Read one column attribute into ``spec``; those that do not change the table map are skipped."""
    token = reader.next("a column attribute")
    word = token.text.upper() if token.kind == "word" else None
    if word in ("UNSIGNED", "ZEROFILL"):
        spec.unsigned = True
    elif word == "SIGNED":
        spec.unsigned = False
    elif word in ("CHARSET", "CHARACTER"):
        if word == "CHARACTER":
            reader.expect_word("SET")
        spec.charset = reader.name("a character set")
    elif word == "COLLATE":
        spec.collation = reader.name("a collation")
    elif word == "NOT":
        reader.expect_word("NULL")
        spec.not_null = True
    elif word == "NULL":
        spec.not_null = False
    elif word == "DEFAULT":
        spec.default = value_tokens(reader)
    elif word == "ON":
        reader.expect_word("UPDATE")
        _skip_value(reader)
    elif word in ("GENERATED", "AS"):
        spec.generated = _generated(reader)
    elif word == "AUTO_INCREMENT":
        spec.auto_increment = True
    elif word == "SERIAL":  # SERIAL DEFAULT VALUE: NOT NULL AUTO_INCREMENT UNIQUE
        reader.expect_word("DEFAULT")
        reader.expect_word("VALUE")
        spec.not_null = spec.auto_increment = True
    elif word == "BINARY":
        spec.binary = True
    elif word == "CHECK":
        reader.group()
    elif word == "INVISIBLE":
        spec.invisible = True
    elif word == "PRIMARY":
        reader.expect_word("KEY")
        spec.primary_key = spec.not_null = True
    elif word == "UNIQUE":
        reader.take_word("KEY")
    elif word in ("WITH", "WITHOUT"):
        reader.expect_word("SYSTEM")
        reader.expect_word("VERSIONING")
    elif word in _ATTRIBUTES_WITH_VALUE:
        reader.take_op("=")
        reader.next(f"the value of {word}")
    elif word not in _SKIPPED_ATTRIBUTES:
        if word == "COMPRESSED":
            raise reader.error("compressed columns are logged as types the codec does not read", token)
        raise reader.error(f"expected a column attribute, found {token.text!r}", token)


def _type_name(reader: Reader) -> tuple[str, str | None]:
    """A column type's name with its synonyms resolved, and the character set it implies:
    DOUBLE PRECISION is DOUBLE, LONG [VARCHAR] MEDIUMTEXT, LONG VARBINARY MEDIUMBLOB, CHARACTER
    CHAR, CHAR VARYING VARCHAR, and NATIONAL CHAR/VARCHAR, NCHAR [VARYING] and NVARCHAR are
    CHAR or VARCHAR in utf8mb3 ("Data Type Storage Requirements" and "String Data Types")."""
    token = reader.next("a column type")
    if token.kind != "word":
        raise reader.error(f"expected a column type, found {token.text!r}", token)
    name, charset = token.text.upper(), None
    if name == "NATIONAL":
        reader.expect_word("CHAR", "CHARACTER", "VARCHAR")
        name, charset = reader.items[reader.pos - 1].text.upper(), "utf8mb3"
    elif name in ("NCHAR", "NVARCHAR"):
        name, charset = name[1:], "utf8mb3"
    if name in ("CHAR", "CHARACTER"):
        name = "VARCHAR" if reader.take_word("VARYING") or (charset and reader.take_word("VARCHAR")) else "CHAR"
    elif name == "DOUBLE":
        reader.take_word("PRECISION")
    elif name == "LONG":
        binary = reader.take_word("VARBINARY")
        name = "MEDIUMBLOB" if binary else "MEDIUMTEXT"
        if not binary:
            reader.take_word("VARCHAR")
    return name, charset


def column_spec(reader: Reader) -> ColumnSpec:
    name_token = reader.peek()
    name = reader.name("a column name")
    type_name, charset = _type_name(reader)
    arguments = []
    token = reader.peek()
    if token is not None and token.kind == "op" and token.text == "(":
        arguments = reader.group()
    spec = ColumnSpec(name, reader.where(name_token), type_name, arguments, charset=charset)
    if type_name == "SERIAL":  # BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE
        spec.unsigned = spec.not_null = spec.auto_increment = True
    while reader.peek() is not None:
        _attribute(reader, spec)
    return spec


def key_parts(reader: Reader) -> list[tuple[str, int]] | None:
    """``(`a`, `b`(10) DESC)``: (column, prefix or 0) each; None for a key over an expression."""
    parts = []
    for part in split_at_commas(reader.group()):
        inner = Reader(part, reader.lines, reader.what)
        token = inner.peek()
        if token.kind == "op":
            return None  # a functional key part ((expr))
        column = inner.name("a key column")
        prefix = 0
        following = inner.peek()
        if following is not None and following.kind == "op" and following.text == "(":
            prefix = Reader(inner.group(), reader.lines, reader.what).number("a prefix length")
        parts.append((column, prefix))
    return parts


def _key(reader: Reader, table: Table) -> None:
    """A key or constraint line: PRIMARY KEY and UNIQUE keys are kept, the others skipped."""
    if reader.take_word("CONSTRAINT"):
        token = reader.peek()
        if token is not None and not token.is_word(*KEY_WORDS):
            reader.name("a constraint name")
    if reader.take_word("PRIMARY"):
        reader.expect_word("KEY")
        table.primary_key = key_parts(reader) or []
    elif reader.take_word("UNIQUE"):
        reader.take_word("KEY", "INDEX")
        token = reader.peek()
        if token is not None and not (token.kind == "op" and token.text == "("):
            reader.name("a key name")
        parts = key_parts(reader)
        if any(token.is_word("HASH") for token in reader.items[reader.pos :]):
            table.hash_keys += 1
        elif parts is not None:
            table.unique_keys.append(parts)


def starts_key(items: list[Token]) -> bool:
    """Whether a definition is a key or constraint rather than a column: PERIOD and VECTOR begin
    one only as ``PERIOD FOR`` and ``VECTOR INDEX|KEY``, else they may be a column's name."""
    following = items[1] if len(items) > 1 else None
    if items[0].is_word("PERIOD"):
        return following is not None and following.is_word("FOR")
    if items[0].is_word("VECTOR"):
        return following is not None and following.is_word("INDEX", "KEY")
    return items[0].is_word(*KEY_WORDS)


def _definition(items: list[Token], table: Table, lines: list[str]) -> None:
    reader = Reader(items, lines, "definition")
    if starts_key(items):
        _key(reader, table)
    else:
        table.columns.append(column_spec(reader))


def table_options(items: list[Token], table: Table, lines: list[str]) -> None:
    """DEFAULT CHARSET / CHARACTER SET / COLLATE among the options after the column list."""
    reader = Reader(items, lines, "table options")
    while reader.peek() is not None:
        token = reader.next("a table option")
        if token.kind == "op" and token.text == "(":
            reader.pos -= 1
            reader.group()
        elif token.is_word("CHARSET") or (token.is_word("CHARACTER") and reader.take_word("SET")):
            reader.take_op("=")
            table.charset = reader.name("a character set")
        elif token.is_word("COLLATE"):
            reader.take_op("=")
            table.collation = reader.name("a collation")


def _name_parts(token: Token) -> list[str | None]:
    """An identifier, or an unquoted word cut at its dots (None for each dot)."""
    if token.kind == "ident":
        return [token.text]
    parts: list[str | None] = []
    for index, piece in enumerate(token.text.split(".")):
        parts += ([None] if index else []) + ([piece] if piece else [])
    return parts


def qualified_name(reader: Reader, what: str) -> tuple[str | None, str]:
    """``name`` or ``db.name``, quoted or not: (the database or None, the name)."""
    parts: list[str | None] = []
    while not parts or parts[-1] is None or _adjacent_dotted(reader):
        token = reader.next(what)
        if token.kind not in ("ident", "word"):
            raise reader.error(f"expected {what}, found {token.text!r}", token)
        parts += _name_parts(token)
    names = [part for part in parts if part is not None]
    if len(names) != len(parts) - len(names) + 1 or len(names) > 2:
        raise reader.error(f"expected {what}, found {'.'.join(names)!r}", token)
    return (names[0], names[1]) if len(names) == 2 else (None, names[0])


def _adjacent_dotted(reader: Reader) -> bool:
    """Whether a word beginning with a dot (`.t`, or `.` before a quoted name) follows without a space."""
    token = reader.peek()
    return token is not None and not token.spaced and token.kind == "word" and token.text.startswith(".")


def table_head(reader: Reader) -> Table:
    """``CREATE [OR REPLACE] [TEMPORARY] TABLE [IF NOT EXISTS] [db.]name``: the table, so far
    without columns ("CREATE TABLE Statement" in the MySQL and MariaDB manuals)."""
    reader.expect_word("CREATE")
    or_replace = reader.take_word("OR")
    if or_replace:
        reader.expect_word("REPLACE")
    temporary = reader.take_word("TEMPORARY")
    reader.expect_word("TABLE")
    if_not_exists = reader.take_word("IF")
    if if_not_exists:
        reader.expect_word("NOT")
        reader.expect_word("EXISTS")
    database, name = qualified_name(reader, "a table name")
    return Table(name, database=database, temporary=temporary, if_not_exists=if_not_exists, or_replace=or_replace)


def table_body(reader: Reader, table: Table) -> None:
    """``(create_definition, ...) [table_options]`` after the table's name, read into ``table``."""
    token = reader.peek()
    if token is None or token.kind != "op" or token.text != "(":
        raise reader.error("expected '(' and the column definitions", token)
    for definition in split_at_commas(reader.group()):
        _definition(definition, table, reader.lines)
    table_options(reader.items[reader.pos :], table, reader.lines)
    if not table.columns:
        raise reader.error("expected at least one column definition")


def _statement(statement: str) -> Table:
    """The table name, column definitions, keys and charset options of a CREATE TABLE statement."""
    reader = Reader(tokens(statement), statement.splitlines() or [""], "statement")
    table = table_head(reader)
    table_body(reader, table)
    return table


# -- the table map -----------------------------------------------------------------


def _primary_key(table: Table, indexes: dict[str, int]) -> list[tuple[int, int]]:
    """PRIMARY KEY, an inline PRIMARY KEY, else the first UNIQUE key over NOT NULL columns
    without prefixes (which the server uses as the primary key)."""
    inline = [(spec.name, 0) for spec in table.columns if spec.primary_key]
    candidates = [table.primary_key or inline]
    nullable = {spec.name for spec in table.columns if not spec.not_null}
    candidates += [
        parts for parts in table.unique_keys
        if all(prefix == 0 and name not in nullable for name, prefix in parts)
    ]
    parts = next((parts for parts in candidates if parts), [])
    lowered = {name.lower(): index for name, index in indexes.items()}
    try:
        return [(lowered[name.lower()], prefix) for name, prefix in parts]
    except KeyError as exc:
        raise ValueError(f"table {table.name!r}: key over unknown column {exc.args[0]!r}") from None


def _hash_columns(table: Table, first_index: int) -> list[Column]:
    """MariaDB's hidden ``DB_ROW_HASH_n`` columns, one per UNIQUE ... USING HASH key (a long
    unique key): nullable BIGINT UNSIGNED after the table's own columns."""
    return [
        Column(first_index + n, ColumnType.LONGLONG, ColumnType.LONGLONG, True, name=f"DB_ROW_HASH_{n + 1}",
               unsigned=True)
        for n in range(table.hash_keys)
    ]


def _charset_fields(columns: list[Column], selects: Callable[[Column], bool]) -> int | None:
    """The default collation the server logs for the selected columns, None when it logs one
    per column: DEFAULT_CHARSET (the most used collation, then an index and collation per other
    column) is chosen unless one byte per column is shorter than one plus two per exception
    (``Table_map_log_event::init_charset_field``)."""
    counts: dict[int, int] = {}
    for column in columns:
        if selects(column):
            counts[column.collation_id] = counts.get(column.collation_id, 0) + 1
    if not counts:
        return None
    total = sum(counts.values())
    most_used = max(sorted(counts), key=lambda collation_id: counts[collation_id])
    return None if total < 1 + (total - counts[most_used]) * 2 else most_used


def _is_character(column: Column) -> bool:
    return column.collation_id is not None and column.real_type not in ENUM_SET_TYPES


def _is_enum_or_set(column: Column) -> bool:
    return column.real_type in ENUM_SET_TYPES


def table_map_of(statement: str, *, database: str, flavour: str = "mariadb", table_id: int = 0) -> TableMap:
    """The :class:`TableMap` a ``flavour`` server ("mariadb" or "mysql") with
    ``binlog_row_metadata=FULL`` logs for the table ``statement`` creates (the text
    ``SHOW CREATE TABLE`` prints). Unsupported syntax raises ``ValueError`` naming the line."""
    if flavour not in FLAVOURS:
        raise ValueError(f"flavour must be one of {FLAVOURS}, not {flavour!r}")
    table = _statement(statement)
    builder = _Builder(table, flavour)
    try:
        columns = [builder.column(index, spec) for index, spec in enumerate(table.columns)]
    except (charsets.UnknownCollationError, charsets.CharsetError) as exc:
        raise ValueError(f"table {table.name!r}: {exc}") from None
    if flavour == "mariadb":
        columns += _hash_columns(table, len(columns))
    indexes = {column.name: column.index for column in columns}
    primary_key = _primary_key(table, indexes)
    for position, (index, prefix) in enumerate(primary_key):
        columns[index].primary_key_position, columns[index].primary_key_prefix = position, prefix
        columns[index].nullable = False
    result = TableMap(
        table_id, database, table.name, columns, primary_key,
        default_charset=_charset_fields(columns, _is_character),
        enum_set_default_charset=_charset_fields(columns, _is_enum_or_set),
        metadata_level="FULL",
    )
    log.debug("table map of %s.%s: %d columns, primary key %s", database, table.name, len(columns), primary_key)
    return result
