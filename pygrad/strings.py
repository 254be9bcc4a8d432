"""tf.strings: the string ops under their TF 1 names in this namespace."""
from pygrad.ops import decode_ops, string_hash, string_ops, string_split

as_string = string_ops.as_string
format = string_ops.string_format
join = string_ops.string_join
length = string_ops.length
lower = string_ops.lower
upper = string_ops.upper
split = string_split.strings_split
strip = string_ops.string_strip
substr = string_ops.substr
regex_replace = string_ops.regex_replace
regex_full_match = string_ops.regex_full_match
reduce_join = string_ops.reduce_join
to_number = decode_ops.string_to_number
to_hash_bucket = string_hash.string_to_hash_bucket
to_hash_bucket_fast = string_hash.string_to_hash_bucket_fast
to_hash_bucket_strong = string_hash.string_to_hash_bucket_strong
