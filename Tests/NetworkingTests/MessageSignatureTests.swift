import Networking
import Testing

@Suite struct MessageSignatureTests {
  // RFC 4231 §4.3 (test case 2) and §4.4 (test case 3): the published HMAC-SHA-256 values.
  @Test func rfc4231Vectors() {
    #expect(
      MessageSignature.hmacSHA256Hex(
        key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    #expect(
      MessageSignature.hmacSHA256Hex(
        key: [UInt8](repeating: 0xaa, count: 20), message: [UInt8](repeating: 0xdd, count: 50))
        == "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe")
  }
}
