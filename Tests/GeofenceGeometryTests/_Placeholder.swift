// Tests for the geometry core live beside this file.
