// snn::Sha256 (snn/sha256.hpp) against the FIPS 180-4 / NIST test vectors, and fed in pieces of every
// size around its 64-byte block (the buffering is where a hand-written hash goes wrong); the portable
// code and the CPU's SHA instructions (where it has them) give the same digests.
#include <catch2/catch.hpp>
#include <string>

#include "snn/sha256.hpp"

using snn::Sha256;
using snn::sha256_hex;

TEST_CASE("SHA-256 gives the standard's digests", "[digest]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("SHA-256 without the CPU's SHA instructions gives the same digests", "[digest]") {
  INFO("this CPU has SHA instructions: " << Sha256::hardware_available());
  std::string text;
  for (int i = 0; i < 100000; ++i) text += char((i * 131) % 251);
  for (size_t length : {size_t(0), size_t(3), size_t(64), size_t(1000), size_t(100000)}) {
    Sha256 portable(false), fastest;
    portable.update(text.substr(0, length));
    fastest.update(text.substr(0, length));
    CHECK(portable.hex_digest() == fastest.hex_digest());
  }
  Sha256 portable(false);
  portable.update("abc");
  CHECK(portable.hex_digest() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("SHA-256 fed in pieces equals SHA-256 of the whole", "[digest]") {
  std::string text;
  for (int i = 0; i < 300; ++i) text += char('a' + (i * 7) % 26);
  for (size_t length : {size_t(55), size_t(56), size_t(63), size_t(64), size_t(65), size_t(119), size_t(300)}) {
    const std::string whole = sha256_hex(text.substr(0, length));
    for (size_t piece : {size_t(1), size_t(7), size_t(63), size_t(64), size_t(100)}) {
      Sha256 h;
      for (size_t at = 0; at < length; at += piece) h.update(text.substr(at, std::min(piece, length - at)));
      INFO("length " << length << ", pieces of " << piece);
      CHECK(h.hex_digest() == whole);
    }
  }
}
