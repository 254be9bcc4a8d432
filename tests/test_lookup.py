"""Lookup tables (tf.contrib.lookup, tf.lookup) against TensorFlow's: the same ids and strings from
the same vocabularies (tensors and files, out-of-vocabulary buckets by TF's hashes, integer keys,
SparseTensor keys, IdTableWithHashBuckets over a file's table or alone, the id and string text-file
initializers), TF's errors for a table used before its initializer, a key given twice, an
empty line or a short file; MonitoredTrainingSession initializes the tables as TF's Scaffold."""
import numpy as np
import pytest

import pygrad as tf


@pytest.fixture(scope="module")
def tf_lookup(tf_peer):
    from tensorflow.python.ops import lookup_ops  # TF 2 keeps TF1's vocabulary tables here
    return lookup_ops


def _vocab(tmp_path, text, name="vocab.txt"):
    path = tmp_path / name
    path.write_bytes(text)
    return str(path)


def _run(m, lookup, build):
    with m.Graph().as_default(), m.Session() as s:
        out = build(m, lookup)
        s.run(m.tables_initializer())
        return s.run(out)


WORDS = [b"apple", b"zebra", b"banana", b"", b"cherry", b"kiwi", "\u00e9t\u00e9".encode()]


def _cases(tmp_path):
    words_file = _vocab(tmp_path, b"apple\nbanana\r\ncherry\n\xc3\xa9t\xc3\xa9\n")
    ids_file = _vocab(tmp_path, b"10\tten\n20\ttwenty\n30\tthirty\n", "ids.txt")
    return {
        "from_tensor": lambda m, L: L.index_table_from_tensor(["apple", "banana", "cherry"]).lookup(m.constant(WORDS)),
        "from_tensor_oov": lambda m, L: [t.lookup(m.constant(WORDS)) for t in [L.index_table_from_tensor(
            ["apple", "banana", "cherry"], num_oov_buckets=3)]] + [L.index_table_from_tensor(
                ["apple"], num_oov_buckets=5).size()],
        "from_tensor_ints": lambda m, L: L.index_table_from_tensor([3, 7, 11], num_oov_buckets=4, dtype=m.int32).lookup(
            m.constant([7, 9, 3, -1, 11, 12], m.int32)),
        "from_tensor_strong": lambda m, L: L.index_table_from_tensor(
            ["apple"], num_oov_buckets=7, hasher_spec=L.StrongHashSpec((1, 2))).lookup(m.constant(WORDS)),
        "from_file": lambda m, L: L.index_table_from_file(words_file, default_value=-7).lookup(m.constant(WORDS)),
        "from_file_oov_size": lambda m, L: L.index_table_from_file(words_file, num_oov_buckets=2, vocab_size=2).lookup(
            m.constant(WORDS)),
        "from_file_columns": lambda m, L: L.index_table_from_file(
            ids_file, key_dtype=m.int64, key_column_index=0, value_column_index=L.TextFileIndex.LINE_NUMBER
        ).lookup(m.constant([20, 5, 30], m.int64)),
        "to_string_tensor": lambda m, L: L.index_to_string_table_from_tensor(["a", "b"]).lookup(
            m.constant([1, 5, 0], m.int64)),
        "to_string_file": lambda m, L: L.index_to_string_table_from_file(words_file, default_value="?").lookup(
            m.constant([[3, 0], [9, 1]], m.int64)),
        "static_hash_table": lambda m, L: L.StaticHashTableV1(L.TextFileInitializer(
            ids_file, m.int64, 0, m.string, 1), "none").lookup(m.constant([30, 10, 0], m.int64)),
        "key_value_sparse": lambda m, L: L.StaticHashTableV1(L.KeyValueTensorInitializer(
            m.constant(["x", "y"]), m.constant([1.5, -2.0])), -1.0).lookup(m.SparseTensor(
                [[0, 0], [1, 2]], m.constant(["y", "q"]), [2, 3])),
        "id_table_with_hash_buckets": lambda m, L: [t.lookup(m.constant(WORDS)) for t in [L.IdTableWithHashBuckets(
            L.HashTable(L.TextFileIdTableInitializer(words_file), -1), 3, hasher_spec=L.FastHashSpec)]] + [
                L.IdTableWithHashBuckets(L.HashTable(L.TextFileIdTableInitializer(words_file), -1), 3).size()],
        "hash_buckets_only": lambda m, L: [L.IdTableWithHashBuckets(None, 5, key_dtype=m.string).lookup(
            m.constant(WORDS)), L.IdTableWithHashBuckets(None, 4, key_dtype=m.int64).lookup(
                m.constant([3, -7, 12], m.int64))],
        "id_table_initializer_columns": lambda m, L: L.HashTable(L.TextFileIdTableInitializer(
            ids_file, key_column_index=1, value_column_index=0), -1).lookup(m.constant(["twenty", "ten", "x"])),
        "string_table_initializer": lambda m, L: [L.HashTable(L.TextFileStringTableInitializer(
            words_file), "UNK").lookup(m.constant([0, 3, 9], m.int64)), L.HashTable(L.TextFileStringTableInitializer(
                ids_file, key_column_index=0, value_column_index=1, delimiter="\t"), "?").lookup(
                    m.constant([30, 10, 5], m.int64))],
    }


CASE_NAMES = ["from_tensor", "from_tensor_oov", "from_tensor_ints", "from_tensor_strong", "from_file",
              "from_file_oov_size", "from_file_columns", "to_string_tensor", "to_string_file", "static_hash_table",
              "key_value_sparse", "id_table_with_hash_buckets", "hash_buckets_only", "id_table_initializer_columns",
              "string_table_initializer"]


@pytest.mark.parametrize("case", CASE_NAMES)
def test_tables_give_tensorflows_values(tf_peer, tf_lookup, tmp_path, case):
    build = _cases(tmp_path)[case]
    ours = _run(tf, tf.contrib.lookup if case != "static_hash_table" and case != "key_value_sparse" else _Ours, build)
    theirs = _run(tf_peer, tf_lookup, build)
    flat_ours = ours if isinstance(ours, list) else [ours]
    flat_theirs = theirs if isinstance(theirs, list) else [theirs]
    for a, b in zip(flat_ours, flat_theirs):
        for x, y in zip(a, b) if isinstance(b, tuple) else [(a, b)]:
            np.testing.assert_array_equal(x, y)
            assert np.asarray(x).dtype == np.asarray(y).dtype


class _Ours:
    """TF's lookup_ops names for the table classes, in pygrad."""
    StaticHashTableV1 = tf.lookup.StaticHashTable
    TextFileInitializer = tf.lookup.TextFileInitializer
    KeyValueTensorInitializer = tf.lookup.KeyValueTensorInitializer


@pytest.mark.parametrize("text, size, message", [
    (b"apple\nbanana\n\ncherry\n", None, "empty line found at position 14"),
    (b"apple\nbanana\napple\n", None, "HashTable has different value for same key. Key apple has 0 and trying to "
                                      "add value 2"),
    (b"apple\nbanana\n", 5, "Invalid vocab_size in .*: expected 5 but got 2"),
])
def test_bad_vocabularies_give_tensorflows_errors(tf_peer, tf_lookup, tmp_path, text, size, message):
    path = _vocab(tmp_path, text)
    for m, lookup in ((tf, tf.contrib.lookup), (tf_peer, tf_lookup)):
        with m.Graph().as_default(), m.Session() as s:
            lookup.index_table_from_file(path, vocab_size=size)
            with pytest.raises((m.errors.InvalidArgumentError, m.errors.FailedPreconditionError), match=message):
                s.run(m.tables_initializer())
            assert s.run(m.constant(1)) == 1


def test_a_table_used_before_its_initializer_ran_is_failed_precondition():
    table = tf.contrib.lookup.index_table_from_tensor(["a", "b"])
    ids = table.lookup(tf.constant(["a"]))
    with tf.Session() as s:
        with pytest.raises(tf.errors.FailedPreconditionError, match="Table not initialized"):
            s.run(ids)
        s.run(table.initializer)
        assert s.run(ids).tolist() == [0]
        s.run(tf.tables_initializer())  # again: the same pairs, as TF's
    with pytest.raises(TypeError, match="Dtype of argument `keys`"):
        table.lookup(tf.constant([1]))


def test_monitored_training_session_initializes_the_tables():
    table = tf.contrib.lookup.index_table_from_tensor(["a", "b", "c"])
    ids = table.lookup(tf.constant(["c", "a", "x"]))
    tf.train.get_or_create_global_step()
    with tf.train.MonitoredTrainingSession() as s:
        assert s.run(ids).tolist() == [2, 0, -1]
