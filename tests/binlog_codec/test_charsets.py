"""Collation table and character set codecs (binlog_codec.charsets)."""

from __future__ import annotations

import codecs
import functools
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlog_codec.charsets import (
    BINARY_COLLATION_ID,
    CharsetError,
    Collation,
    RoundTrip,
    RoundTrips,
    UnknownCollationError,
    charset_of,
    collation,
    collations,
    decode,
    decoder,
    encode,
    is_binary,
    needs_round_trip,
)

C1_BYTES = (0x81, 0x8D, 0x8F, 0x90, 0x9D)
LATIN1 = 8  # latin1_swedish_ci
UTF8MB3 = 33  # utf8mb3_general_ci
UCS2 = 35  # ucs2_general_ci
UTF8MB4 = 45  # utf8mb4_general_ci
UTF16 = 54  # utf16_general_ci
UTF16LE = 56  # utf16le_general_ci
UTF32 = 60  # utf32_general_ci

# Character sets whose characters are all of Unicode, or its Basic Multilingual Plane.
ALL_OF_UNICODE = {"utf8mb4", "utf16", "utf16le", "utf32", "gb18030"}
BMP_ONLY = {"utf8mb3", "ucs2"}


def first_id_per_charset() -> dict[str, int]:
    """The lowest MySQL collation id of every character set except binary."""
    ids: dict[str, int] = {}
    for cid, found in collations("mysql").items():
        if found.charset != "binary":
            ids.setdefault(found.charset, cid)
    return ids


CHARSET_IDS = first_id_per_charset()


# ---------------------------------------------------------------------------
# MySQL's latin1
# ---------------------------------------------------------------------------
def test_mysql_latin1_round_trips_all_256_bytes():
    every_byte = bytes(range(256))
    text = decode(every_byte, LATIN1)
    assert len(text) == 256
    assert encode(text, LATIN1) == every_byte


def test_mysql_latin1_matches_cp1252_on_its_251_defined_bytes():
    defined = [byte for byte in range(256) if byte not in C1_BYTES]
    assert len(defined) == 251
    for byte in defined:
        assert decode(bytes([byte]), LATIN1) == bytes([byte]).decode("cp1252")


@pytest.mark.parametrize("byte", C1_BYTES)
def test_mysql_latin1_keeps_cp1252_undefined_bytes_as_c1_controls(byte):
    assert decode(bytes([byte]), LATIN1) == chr(byte)
    assert encode(chr(byte), LATIN1) == bytes([byte])
    assert bytes([byte]).decode("mysql_latin1") == chr(byte)


def test_mysql_latin1_has_no_byte_for_text_outside_it():
    with pytest.raises(CharsetError) as caught:
        encode("a\u0100", LATIN1, column="name")
    assert caught.value.offset == 1
    assert "latin1" in str(caught.value) and "'name'" in str(caught.value)


# ---------------------------------------------------------------------------
# Round trips in every character set
# ---------------------------------------------------------------------------
@functools.cache
def encodable_characters(charset: str) -> list[str]:
    """Characters of ``charset`` found by decoding every one- and two-byte
    sequence (and the three-byte 0x8F ones of the EUC-JP sets), keeping those
    that ``encode`` accepts."""
    cid = CHARSET_IDS[charset]
    sequences = [bytes([a]) for a in range(256)]
    if collation(cid).maxlen > 1:
        sequences += [bytes([a, b]) for a in range(0x80, 0x100) for b in range(256)]
    if charset in ("ujis", "eucjpms"):
        sequences += [bytes([0x8F, a, b]) for a in range(0xA1, 0xFF) for b in range(0xA1, 0xFF)]
    found = set()
    for sequence in sequences:
        try:
            text = decode(sequence, cid)
        except CharsetError:
            continue
        if len(text) == 1:
            found.add(text)
    return sorted(char for char in found if can_encode(char, cid))


def can_encode(char: str, cid: int) -> bool:
    try:
        encode(char, cid)
    except CharsetError:
        return False
    return True


@st.composite
def charset_and_text(draw):
    charset = draw(st.sampled_from(sorted(CHARSET_IDS)))
    if charset in ALL_OF_UNICODE:
        characters = st.characters(blacklist_categories=("Cs",))
    elif charset in BMP_ONLY:
        characters = st.characters(blacklist_categories=("Cs",), max_codepoint=0xFFFF)
    else:
        characters = st.sampled_from(encodable_characters(charset))
    return charset, draw(st.text(characters))


@given(charset_and_text())
def test_encode_then_decode_gives_the_text_back(charset_text):
    charset, text = charset_text
    cid = CHARSET_IDS[charset]
    assert decode(encode(text, cid), cid) == text


@pytest.mark.parametrize("charset", sorted(set(CHARSET_IDS) - ALL_OF_UNICODE - BMP_ONLY))
def test_every_character_set_has_characters_beyond_ascii(charset):
    # Guards the round-trip test against a codec that decodes nothing.
    beyond_ascii = [char for char in encodable_characters(charset) if ord(char) > 0x7F]
    assert beyond_ascii or charset == "ascii"


def test_every_collation_has_a_working_codec():
    for flavour in ("mysql", "mariadb"):
        for found in collations(flavour).values():
            if found.codec is not None:
                assert codecs.lookup(found.codec)


# ---------------------------------------------------------------------------
# Unicode character sets
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "cid, text, data",
    [
        (UCS2, "A\u00e9", b"\x00A\x00\xe9"),
        (UTF16, "A\U0001f600", b"\x00A\xd8\x3d\xde\x00"),
        (UTF32, "A\U0001f600", b"\x00\x00\x00A\x00\x01\xf6\x00"),
        (UTF16LE, "A\U0001f600", b"A\x00\x3d\xd8\x00\xde"),
    ],
)
def test_ucs2_utf16_utf32_are_big_endian_and_utf16le_little(cid, text, data):
    assert encode(text, cid) == data
    assert decode(data, cid) == text


def test_invalid_utf8mb4_names_the_column_charset_and_offset():
    with pytest.raises(CharsetError) as caught:
        decode(b"caf\xc3\xa9 \xff!", UTF8MB4, column="title")
    error = caught.value
    assert isinstance(error, ValueError)
    assert (error.column, error.charset, error.offset) == ("title", "utf8mb4", 6)
    assert "'title'" in str(error) and "utf8mb4" in str(error) and "offset 6" in str(error)


@pytest.mark.parametrize("data", [b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82", b"\xf4\x90\x80\x80"])
def test_utf8mb4_rejects_overlong_surrogate_truncated_and_too_large(data):
    with pytest.raises(CharsetError):
        decode(data, UTF8MB4)


def test_utf8mb3_and_ucs2_hold_no_character_above_u_ffff():
    with pytest.raises(CharsetError) as caught:
        decode(b"ok \xf0\x9f\x98\x80", UTF8MB3, column="c")
    assert caught.value.offset == 3
    with pytest.raises(CharsetError) as caught:
        decode(b"\x00a\xd8\x3d\xde\x00", UCS2)
    assert caught.value.offset == 2
    with pytest.raises(CharsetError):
        encode("\U0001f600", UTF8MB3)
    assert decode("é".encode(), UTF8MB3) == "é"


# ---------------------------------------------------------------------------
# MySQL's variants of other character sets
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "charset, data, text",
    [
        ("cp866", b"\xfc\xfd", "\u207f\u00b2"),
        ("greek", b"\xa1\xa2\xe1", "\u02bd\u02bc\u03b1"),
        ("hebrew", b"\xaf\xe0", "\u203e\u05d0"),
        ("koi8u", b"\x95\xad", "\u2022\u0491"),
        ("swe7", b"@[\\]^`{|}~", "ÉÄÖÅÜéäöåü"),
        ("dec8", b"\xa8\xd7\xdd", "\u00a4\u0152\u0178"),
        ("keybcs2", b"\x80\x87\xb0", "\u010c\u010d\u2591"),
        ("geostd8", b"\x80\xc0\xfd", "\u20ac\u10d0\u2116"),
        ("armscii8", b"\xb2\xb3", "\u0531\u0561"),
        ("hp8", b"\xa1\xfe", "\u00c0\u00b1"),
        ("euckr", b"\x81\x41", "\uac02"),
        ("sjis", b"\x81\x5f", "\\"),
        ("ujis", b"\xa1\xc0", "\\"),
        ("eucjpms", b"\xa1\xc1\x8f\xa2\xb7", "\uff5e\uff5e"),
        ("big5", b"\xf9\xd6\xa4\xa4", "\u7881\u4e2d"),
    ],
)
def test_mysql_reading_where_python_codecs_differ(charset, data, text):
    assert decode(data, CHARSET_IDS[charset]) == text


@pytest.mark.parametrize(
    "charset, data, offset",
    [
        ("cp1256", b"ab\x8a", 2),
        ("greek", b"\xa4", 0),
        ("swe7", b"a\x80", 1),
        ("hp8", b"\xff", 0),
        ("tis620", b"\xa0", 0),
        ("cp932", b"\x82\xa0\x80", 2),
        ("big5", b"a\xa1\xfe", 1),
        ("ujis", b"\xf5\xa1", 0),
        ("ascii", b"\x80", 0),
    ],
)
def test_bytes_mysql_has_no_character_for_raise(charset, data, offset):
    with pytest.raises(CharsetError) as caught:
        decode(data, CHARSET_IDS[charset])
    assert caught.value.offset == offset and caught.value.charset == charset


def test_encode_never_gives_bytes_that_read_as_another_character():
    # Python's shift_jis encodes U+FF3C as 0x815F, which MySQL reads as "\".
    with pytest.raises(CharsetError):
        encode("\uff3c", CHARSET_IDS["sjis"])
    assert encode("\uff5e", CHARSET_IDS["eucjpms"]) == b"\xa1\xc1"
    assert encode("(", CHARSET_IDS["armscii8"]) == b"("


def test_mysql_codecs_are_registered_and_strict():
    assert codecs.lookup("mysql-latin1").name == "mysql_latin1"
    assert b"\x81\x5f".decode("mysql_sjis") == "\\"
    with pytest.raises(ValueError):
        b"\x81\x5f".decode("mysql_sjis", errors="replace")


# ---------------------------------------------------------------------------
# The collation table
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "cid, name, charset, maxlen",
    [
        (8, "latin1_swedish_ci", "latin1", 1),
        (33, "utf8mb3_general_ci", "utf8mb3", 3),
        (45, "utf8mb4_general_ci", "utf8mb4", 4),
        (46, "utf8mb4_bin", "utf8mb4", 4),
        (63, "binary", "binary", 1),
        (28, "gbk_chinese_ci", "gbk", 2),
        (51, "cp1251_general_ci", "cp1251", 1),
        (35, "ucs2_general_ci", "ucs2", 2),
        (224, "utf8mb4_unicode_ci", "utf8mb4", 4),
        (192, "utf8mb3_unicode_ci", "utf8mb3", 3),
        (255, "utf8mb4_0900_ai_ci", "utf8mb4", 4),
    ],
)
@pytest.mark.parametrize("flavour", ["mysql", "mariadb"])
def test_well_known_ids(flavour, cid, name, charset, maxlen):
    found = collation(cid, flavour)
    assert (found.id, found.name, found.charset, found.maxlen) == (cid, name, charset, maxlen)
    assert charset_of(cid, flavour) == charset


@pytest.mark.parametrize(
    "cid, mysql, mariadb",
    [
        (213, "utf8mb3_croatian_ci", "utf8mb3_croatian_mysql561_ci"),
        (245, "utf8mb4_croatian_ci", "utf8mb4_croatian_mysql561_ci"),
        (76, "utf8mb3_tolower_ci", None),
        (248, "gb18030_chinese_ci", None),
        (309, "utf8mb4_0900_bin", "utf8mb4_0900_bin"),
        (323, "utf8mb4_mn_cyrl_0900_as_cs", None),
        (576, None, "utf8mb3_croatian_ci"),
        (1032, None, "latin1_swedish_nopad_ci"),
        (2048, None, "utf8mb3_uca1400_ai_ci"),
        (2304, None, "utf8mb4_uca1400_ai_ci"),
        (3271, None, "utf32_uca1400_croatian_nopad_as_cs"),
    ],
)
def test_ids_by_flavour(cid, mysql, mariadb):
    for flavour, name in (("mysql", mysql), ("mariadb", mariadb)):
        if name is None:
            with pytest.raises(UnknownCollationError):
                collation(cid, flavour)
        else:
            assert collation(cid, flavour).name == name


def test_table_sizes():
    assert len(collations("mysql")) == 286
    assert max(collations("mysql")) == 323
    assert len(collations("mariadb")) == 1242 + 44  # 10.11, and the 11.4.5 aliases


def test_names_start_with_their_charset():
    for flavour in ("mysql", "mariadb"):
        for cid, found in collations(flavour).items():
            assert isinstance(found, Collation) and found.id == cid
            assert found.name == "binary" or found.name.startswith(found.charset + "_")


def test_both_flavours_agree_on_the_charset_of_shared_ids():
    mysql, mariadb = collations("mysql"), collations("mariadb")
    for cid in mysql.keys() & mariadb.keys():
        assert mysql[cid].charset == mariadb[cid].charset


@pytest.mark.parametrize(
    "cid, flavour", [(0, "mysql"), (400, "mysql"), (2048, "mysql"), (5000, "mariadb")]
)
def test_unknown_id_raises(cid, flavour):
    with pytest.raises(UnknownCollationError, match=rf"unknown collation id {cid} for {flavour}"):
        collation(cid, flavour)
    with pytest.raises(ValueError):
        decode(b"x", cid, flavour)


def test_unknown_flavour_raises():
    with pytest.raises(ValueError, match="flavour"):
        collation(8, "postgres")


def test_binary_stays_bytes():
    assert is_binary(BINARY_COLLATION_ID) and not is_binary(UTF8MB4)
    assert collation(BINARY_COLLATION_ID).codec is None
    data = b"\x00\xff\xfe"
    assert decode(data, BINARY_COLLATION_ID) == data
    assert decode(memoryview(data), BINARY_COLLATION_ID, "mariadb") == data
    assert encode(data, BINARY_COLLATION_ID) == data
    with pytest.raises(TypeError):
        encode("text", BINARY_COLLATION_ID)


# ---------------------------------------------------------------------------
# Against a live MariaDB server
# ---------------------------------------------------------------------------
def server_version(mariadb) -> tuple[int, ...]:
    version = mariadb.rows("SELECT VERSION()")[0][0]
    return tuple(int(part) for part in re.match(r"(\d+)\.(\d+)\.(\d+)", version).groups())


@pytest.mark.integration
def test_mariadb_table_matches_the_live_server(mariadb):
    live = {
        int(cid): (name, charset)
        for cid, name, charset in mariadb.rows(
            "SELECT ID, FULL_COLLATION_NAME, CHARACTER_SET_NAME "
            "FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY"
        )
    }
    ours = collations("mariadb")
    assert not [cid for cid in live if cid not in ours]
    differ = {
        cid: (row, (ours[cid].name, ours[cid].charset))
        for cid, row in live.items()
        if (ours[cid].name, ours[cid].charset) != row
    }
    assert not differ
    aliases_0900 = {cid for cid, found in ours.items() if "_0900_" in found.name}
    expected_missing = set() if server_version(mariadb) >= (11, 4, 5) else aliases_0900
    assert set(ours) - set(live) == expected_missing


@pytest.mark.integration
def test_maxlen_matches_the_live_server(mariadb):
    live = {
        name: int(maxlen)
        for name, maxlen in mariadb.rows(
            "SELECT CHARACTER_SET_NAME, MAXLEN FROM information_schema.CHARACTER_SETS"
        )
    }
    ours = {found.charset: found.maxlen for found in collations("mariadb").values()}
    assert ours == live


def live_reading(code_points_hex: str, sequence: bytes) -> str | None:
    """The server's CONVERT(... USING utf32) result as one character, None
    when the server has no character for ``sequence`` (it converts it to "?",
    or to U+FFFD in tis620)."""
    code_points = [int(code_points_hex[i : i + 8], 16) for i in range(0, len(code_points_hex), 8)]
    if len(code_points) != 1 or code_points[0] == 0xFFFD:
        return None
    if code_points[0] == ord("?") and sequence != b"?":
        return None
    return chr(code_points[0])


def our_reading(sequence: bytes, cid: int) -> str | None:
    try:
        text = decode(sequence, cid, "mariadb")
    except CharsetError:
        return None
    return text if len(text) == 1 else None


@pytest.mark.integration
def test_single_byte_charsets_read_every_byte_as_the_live_server(mariadb):
    charsets = {found.charset for found in collations("mariadb").values() if found.maxlen == 1}
    single_byte = sorted(charsets - {"binary"})
    selects = [
        f"SELECT '{charset}', "
        + ", ".join(f"HEX(CONVERT(_{charset} x'{byte:02X}' USING utf32))" for byte in range(256))
        for charset in single_byte
    ]
    differ = []
    for charset, *converted in mariadb.rows(" UNION ALL ".join(selects)):
        cid = CHARSET_IDS[charset]
        for byte, code_points in enumerate(converted):
            sequence = bytes([byte])
            if our_reading(sequence, cid) != live_reading(code_points, sequence):
                differ.append((charset, hex(byte)))
    assert not differ


# Lead bytes of sequences the server reads but this module does not (see the
# module docstring): user-defined areas, and eucJP-ms' NEC and IBM rows.
NOT_DECODED = {
    "ujis": re.compile(rb"[\xf5-\xfe]|\x8f[\xf5-\xfe]"),
    "eucjpms": re.compile(rb"[\xad\xf5-\xfe]|\x8f[\xf3-\xfe]"),
}


LEAD = "LPAD(HEX(a.seq), 2, '0')"
TRAIL = "LPAD(HEX(b.seq), 2, '0')"


def conversion_query(charset: str, sequence_hex: str, tables: str) -> str:
    """A SELECT of byte sequences (hex) and the server's reading of each in
    ``charset`` (hex UTF-32)."""
    return (
        f"SELECT {sequence_hex}, "
        f"HEX(CONVERT(CONVERT(UNHEX({sequence_hex}) USING {charset}) USING utf32)) FROM {tables}"
    )


@pytest.mark.integration
@pytest.mark.parametrize(
    "charset", ["big5", "cp932", "eucjpms", "euckr", "gb2312", "gbk", "sjis", "ujis"]
)
def test_multi_byte_charsets_read_like_the_live_server(mariadb, charset):
    queries = [
        conversion_query(charset, LEAD, "mysql.seq_0_to_255 a"),
        conversion_query(
            charset, f"CONCAT({LEAD}, {TRAIL})", "mysql.seq_128_to_255 a JOIN mysql.seq_0_to_255 b"
        ),
    ]
    if charset in NOT_DECODED:
        queries.append(
            conversion_query(
                charset,
                f"CONCAT('8F', {LEAD}, {TRAIL})",
                "mysql.seq_161_to_254 a JOIN mysql.seq_161_to_254 b",
            )
        )
    cid = CHARSET_IDS[charset]
    wrong, not_decoded = [], []
    for sequence_hex, code_points in mariadb.rows(" UNION ALL ".join(queries)):
        sequence = bytes.fromhex(sequence_hex)
        ours, live = our_reading(sequence, cid), live_reading(code_points, sequence)
        if ours is None and live is not None:
            not_decoded.append(sequence)
        elif ours != live:
            wrong.append(sequence_hex)
    assert not wrong
    allowed = NOT_DECODED.get(charset)
    assert [s.hex() for s in not_decoded if allowed is None or not allowed.match(s)] == []


# -- round-trip checks ------------------------------------------------------------------

CP1251 = 51  # cp1251_general_ci


@given(st.binary(max_size=64))
def test_latin1_values_all_come_back_from_a_round_trip(data):
    check = RoundTrip("latin1")
    assert decoder(LATIN1, round_trip=check)(data) == decode(data, LATIN1)
    assert (check.checked, check.mismatches, check.example) == (1, 0, None)


def test_a_value_that_does_not_come_back_is_counted_with_the_first_example():
    check = RoundTrip("cp1251")
    check.record(b"\xe0", b"\xe0")
    check.record(b"\x98", b"?")
    check.record(b"\x99", b"!")
    assert (check.checked, check.mismatches, check.example) == (3, 2, b"\x98")


def test_round_trips_are_kept_per_table_column_and_charset():
    checks = RoundTrips()
    read = decoder(CP1251, round_trip=checks.of("db", "t", "name", "cp1251"))
    assert [read(b"\xcf\xf0\xe8"), read(b"")] == ["При", ""]
    assert checks.of("db", "t", "name", "cp1251") is checks.of("db", "t", "name", "cp1251")
    assert checks.rows() == [{"database": "db", "table": "t", "column": "name", "charset": "cp1251",
                              "checked": 2, "mismatches": 0, "example": None}]


def test_only_charsets_whose_decoding_can_be_lossy_are_round_tripped():
    assert needs_round_trip(LATIN1) and needs_round_trip(CP1251) and needs_round_trip(UCS2)
    assert not needs_round_trip(UTF8MB4) and not needs_round_trip(UTF8MB3)
    assert not needs_round_trip(BINARY_COLLATION_ID)
