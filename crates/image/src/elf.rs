//! Reading what an ELF executable or shared library needs from its headers, without running
//! it: the dynamic loader (`PT_INTERP`), the libraries (`DT_NEEDED`) and where to look for
//! them (`DT_RPATH`, `DT_RUNPATH`).

use std::path::{Path, PathBuf};

use crate::Error;

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PT_INTERP: u32 = 3;
const DT_NULL: u64 = 0;
const DT_NEEDED: u64 = 1;
const DT_STRTAB: u64 = 5;
const DT_RPATH: u64 = 15;
const DT_RUNPATH: u64 = 29;

/// What the headers of one ELF file say about linking.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ElfInfo {
    /// `e_machine`: 62 for x86-64, 183 for AArch64.
    pub machine: u16,
    /// The dynamic loader, for executables that have one.
    pub interpreter: Option<String>,
    /// The libraries it needs, by soname, in order.
    pub needed: Vec<String>,
    /// `DT_RPATH` directories (searched first, when there is no `DT_RUNPATH`).
    pub rpath: Vec<String>,
    /// `DT_RUNPATH` directories.
    pub runpath: Vec<String>,
}

impl ElfInfo {
    /// The OCI architecture name of `machine`: `amd64`, `arm64`, ...
    pub fn architecture(&self) -> &'static str {
        match self.machine {
            62 => "amd64",
            183 => "arm64",
            3 => "386",
            40 => "arm",
            243 => "riscv64",
            21 => "ppc64le",
            22 => "s390x",
            _ => "unknown",
        }
    }
}

/// Reads the linking information of the ELF file at `path`.
///
/// # Errors
///
/// [`Error::Read`] when the file cannot be read, [`Error::NotElf`] when it is not a
/// little-endian 64-bit ELF file or its headers point outside it.
pub fn read_elf(path: &Path) -> Result<ElfInfo, Error> {
    let bytes = std::fs::read(path).map_err(|source| Error::Read {
        path: path.to_owned(),
        source,
    })?;
    parse(&bytes).map_err(|reason| Error::NotElf {
        path: path.to_owned(),
        reason,
    })
}

/// Whether the file at `path` is a 64-bit little-endian ELF file for `machine`.
pub(crate) fn is_elf_for(path: &Path, machine: u16) -> bool {
    use std::io::Read as _;
    let mut header = [0u8; 20];
    std::fs::File::open(path)
        .and_then(|mut file| file.read_exact(&mut header))
        .is_ok()
        && header[..4] == *b"\x7fELF"
        && header[4] == 2
        && header[5] == 1
        && u16::from_le_bytes([header[18], header[19]]) == machine
}

struct Segment {
    kind: u32,
    offset: u64,
    vaddr: u64,
    filesz: u64,
}

fn parse(bytes: &[u8]) -> Result<ElfInfo, String> {
    if bytes.len() < 64 || bytes[..4] != *b"\x7fELF" {
        return Err("no ELF magic number".to_owned());
    }
    if bytes[4] != 2 || bytes[5] != 1 {
        return Err("only little-endian 64-bit ELF files are supported".to_owned());
    }
    let u16_at = |at: usize| -> Result<u16, String> {
        bytes
            .get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .ok_or_else(|| format!("truncated at byte {at}"))
    };
    let u32_at = |at: usize| -> Result<u32, String> {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("four bytes")))
            .ok_or_else(|| format!("truncated at byte {at}"))
    };
    let u64_at = |at: usize| -> Result<u64, String> {
        bytes
            .get(at..at + 8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("eight bytes")))
            .ok_or_else(|| format!("truncated at byte {at}"))
    };
    let machine = u16_at(18)?;
    let phoff = usize::try_from(u64_at(0x20)?).map_err(|e| e.to_string())?;
    let phentsize = usize::from(u16_at(0x36)?);
    let phnum = usize::from(u16_at(0x38)?);
    let mut segments = Vec::with_capacity(phnum);
    for index in 0..phnum {
        let at = phoff + index * phentsize;
        segments.push(Segment {
            kind: u32_at(at)?,
            offset: u64_at(at + 8)?,
            vaddr: u64_at(at + 16)?,
            filesz: u64_at(at + 32)?,
        });
    }
    let slice = |offset: u64, len: u64| -> Result<&[u8], String> {
        let start = usize::try_from(offset).map_err(|e| e.to_string())?;
        let end = start + usize::try_from(len).map_err(|e| e.to_string())?;
        bytes
            .get(start..end)
            .ok_or_else(|| format!("a segment at {offset} runs past the end of the file"))
    };
    let mut info = ElfInfo {
        machine,
        ..ElfInfo::default()
    };
    if let Some(interp) = segments.iter().find(|s| s.kind == PT_INTERP) {
        let raw = slice(interp.offset, interp.filesz)?;
        let text = raw.split(|b| *b == 0).next().unwrap_or_default();
        info.interpreter = Some(String::from_utf8_lossy(text).into_owned());
    }
    let Some(dynamic) = segments.iter().find(|s| s.kind == PT_DYNAMIC) else {
        return Ok(info);
    };
    let table = slice(dynamic.offset, dynamic.filesz)?;
    let mut entries = Vec::new();
    for entry in table.chunks_exact(16) {
        let tag = u64::from_le_bytes(entry[..8].try_into().expect("eight bytes"));
        let value = u64::from_le_bytes(entry[8..].try_into().expect("eight bytes"));
        if tag == DT_NULL {
            break;
        }
        entries.push((tag, value));
    }
    let strtab_vaddr = entries
        .iter()
        .find(|(tag, _)| *tag == DT_STRTAB)
        .map(|(_, value)| *value)
        .ok_or("a dynamic section without a string table")?;
    let strtab = segments
        .iter()
        .filter(|s| s.kind == PT_LOAD)
        .find(|s| s.vaddr <= strtab_vaddr && strtab_vaddr < s.vaddr + s.filesz)
        .map(|s| strtab_vaddr - s.vaddr + s.offset)
        .ok_or("the string table is in no loaded segment")?;
    let string = |offset: u64| -> Result<String, String> {
        let start = usize::try_from(strtab + offset).map_err(|e| e.to_string())?;
        let rest = bytes
            .get(start..)
            .ok_or_else(|| format!("a string at {start} is past the end of the file"))?;
        let end = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
        Ok(String::from_utf8_lossy(&rest[..end]).into_owned())
    };
    let split = |text: String| -> Vec<String> {
        text.split(':')
            .filter(|part| !part.is_empty())
            .map(str::to_owned)
            .collect()
    };
    for (tag, value) in entries {
        match tag {
            DT_NEEDED => info.needed.push(string(value)?),
            DT_RPATH => info.rpath.extend(split(string(value)?)),
            DT_RUNPATH => info.runpath.extend(split(string(value)?)),
            _ => {}
        }
    }
    Ok(info)
}

/// Expands `$ORIGIN` (and `${ORIGIN}`) in a search directory of the object at `object`.
pub(crate) fn expand_origin(directory: &str, object: &Path) -> PathBuf {
    let origin = object
        .parent()
        .map_or_else(|| "/".to_owned(), |p| p.display().to_string());
    PathBuf::from(
        directory
            .replace("${ORIGIN}", &origin)
            .replace("$ORIGIN", &origin),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_binary_needs_libc_through_the_loader() {
        let info = read_elf(&std::env::current_exe().unwrap()).unwrap();
        assert!(
            info.interpreter.as_deref().unwrap().contains("ld-linux"),
            "{info:?}"
        );
        assert!(
            info.needed.iter().any(|n| n.starts_with("libc.so")),
            "{info:?}"
        );
    }

    #[test]
    fn other_files_are_refused_with_a_reason() {
        let error = parse(b"#!/bin/sh\necho hello\n").unwrap_err();
        assert_eq!(error, "no ELF magic number");
    }

    #[test]
    fn origin_is_the_objects_directory() {
        assert_eq!(
            expand_origin("$ORIGIN/../lib", Path::new("/opt/app/bin/app")),
            PathBuf::from("/opt/app/bin/../lib")
        );
    }
}
