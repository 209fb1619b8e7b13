\set x 1 +
