// Integrity check of a TorchScript .pt file, before LibTorch sees it.
//
// A TorchScript file is a ZIP archive (written by PyTorch's miniz: mostly stored entries, deflated code/,
// 64-byte aligned data, zip64 records for large files). LibTorch 1.13 reads it without verifying the
// CRC-32s, so a bit flip in a weight tensor converts silently into a wrong network. This check parses the
// archive itself (no LibTorch needed), bounds-checks every record against the file size, and verifies
// every entry's sizes and CRC-32, streaming the data in fixed-size chunks (memory stays bounded whatever
// the file claims).
#pragma once
#include <string>

namespace snn::conversion {

// Throws snn::Error naming the file (and the entry, when one is at fault) when `path` cannot be read,
// is not a ZIP archive, is truncated or corrupted, or is a ZIP archive that is not TorchScript (e.g. a
// torch.save state_dict: no constants.pkl / code/). Returns normally for an intact TorchScript archive.
void check_torchscript_archive(const std::string& path);

}  // namespace snn::conversion
