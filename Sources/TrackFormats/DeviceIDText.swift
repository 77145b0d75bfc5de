/// The rule every fix reader applies to a device id: non-empty, valid UTF-8, and without
/// control characters (C0, U+0000-U+001F, and DEL, U+007F). A device id becomes a key of the
/// state store, a field of every event and a line of standard error; a NUL or a line end in
/// it would cut or split those, so a row whose device id holds one is refused.
public enum DeviceIDText {
  /// Whether `bytes` (UTF-8) hold a C0 control character or DEL.
  /// - Complexity: O(n); allocates nothing.
  @inlinable
  public static func hasControlCharacter<C: Sequence>(_ bytes: C) -> Bool
  where C.Element == UInt8 {
    bytes.contains { $0 < 0x20 || $0 == 0x7F }
  }
}
