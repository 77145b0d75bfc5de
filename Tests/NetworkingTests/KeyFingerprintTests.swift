import Networking
import Testing

/// ``KeyFingerprint``: PBKDF2-HMAC-SHA256 of the key under the domain-separation salt,
/// checked against Python's `hashlib.pbkdf2_hmac('sha256', key, salt, 100000, 16)`.
@Suite struct KeyFingerprintTests {
  @Test func fingerprintsMatchAnIndependentPBKDF2() {
    #expect(KeyFingerprint.of("k") == "pbkdf2-sha256:f752fd1570191b57f106a58eeca808cb")
    #expect(KeyFingerprint.of("account-a") == "pbkdf2-sha256:900096fbe24a94384250167f0108d5c3")
    #expect(
      KeyFingerprint.of("SECRETKEY123") == "pbkdf2-sha256:eea0d84c3754177111c61755a8d78fa7")
    // Remembered: the second call gives the same text.
    #expect(KeyFingerprint.of("k") == KeyFingerprint.of("k"))
  }

  @Test func anEarlierVersionsFingerprintIsRecognisedButNotCurrent() {
    // FNV-1a 64 of "k": 0xcbf29ce484222325 xor 0x6b, times the FNV prime.
    #expect(KeyFingerprint.legacy("k") == "af63e64c8601fd8a")
    #expect(KeyFingerprint.legacy("") == "cbf29ce484222325")
    #expect(KeyFingerprint.matches("af63e64c8601fd8a", key: "k"))
    #expect(KeyFingerprint.matches(KeyFingerprint.of("k"), key: "k"))
    #expect(!KeyFingerprint.matches(KeyFingerprint.of("k"), key: "K"))
    #expect(!KeyFingerprint.isCurrent("af63e64c8601fd8a"))
    #expect(KeyFingerprint.isCurrent(KeyFingerprint.of("k")))
  }
}
