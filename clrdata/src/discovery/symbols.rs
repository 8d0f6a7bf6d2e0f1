//! A symbol server, when the user names one (`--symbol-server URL`): the runtime module of a
//! build neither the dump nor the build index describes is downloaded by its key in the
//! symbol-store layout SOS and dotnet-symbol use (dotnet/symstore
//! `docs/specs/SSQP_Key_Conventions.md`): `<file>/elf-buildid-<build id>/<file>` for ELF,
//! `<file>/<TimeDateStamp as %08X><SizeOfImage as %x>/<file>` for PE, the file name in lower
//! case. The download goes through the system's `curl` (a subprocess: no HTTP stack linked in)
//! into a cache folder, and the file is used only once its own identity (build id; timestamp
//! and size) equals the one the dump records for the module; a file that differs is deleted
//! and refused.

use dumpreader::{ImageFormat, ModuleIdentity, ModuleImage, ModuleInfo};
use std::path::{Path, PathBuf};
use std::process::Command;
use thiserror::Error;

/// The largest file downloaded (libcoreclr.so is about 7 MB, a single-file host 70 MB).
pub const MAX_DOWNLOAD: u64 = 512 << 20;

/// Where to download runtime modules from, and where to keep them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolServer {
    /// The service's URL (`https://msdl.microsoft.com/download/symbols`); the key is appended
    /// after a `/`.
    pub url: String,
    /// The cache folder (`$XDG_CACHE_HOME/dumpshell/symbols`): files are kept under their key.
    pub cache: PathBuf,
    /// The curl program (`curl`, found on `PATH`).
    pub curl: PathBuf,
}

impl SymbolServer {
    /// A server at `url` with its cache in `cache`, reached with the system's `curl`.
    pub fn new(url: impl Into<String>, cache: impl Into<PathBuf>) -> Self {
        SymbolServer {
            url: url.into(),
            cache: cache.into(),
            curl: PathBuf::from("curl"),
        }
    }
}

/// Why a symbol server gave no usable file.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SymbolError {
    /// The module's identity is not in the dump: there is no key to ask for.
    #[error("the dump records no identity (build id, PE timestamp and size) for {file}: no key to ask for")]
    NoKey {
        /// The module's file name.
        file: String,
    },
    /// The curl program could not be run.
    #[error(
        "the symbol server is reached with the system's curl, and {curl} cannot be run \
         ({os_error}): install curl (e.g. apt-get install curl)"
    )]
    NoCurl {
        /// The program tried.
        curl: String,
        /// Why it could not be run.
        os_error: String,
    },
    /// The download failed (not found, refused, network).
    #[error("{url}: the download failed: {detail}")]
    Download {
        /// The URL asked.
        url: String,
        /// curl's exit status and message.
        detail: String,
    },
    /// The file served is not the dump's module: its identity differs. It was deleted.
    #[error("{url}: the file served has {found}, the dump's module {wanted}: refused")]
    IdentityMismatch {
        /// The URL asked.
        url: String,
        /// The dump's identity of the module.
        wanted: String,
        /// The file's.
        found: String,
    },
    /// The file served has no identity of its kind (not an ELF or PE file, no build id note).
    #[error("{url}: the file served has no build id or PE identity: refused")]
    NoIdentity {
        /// The URL asked.
        url: String,
    },
    /// The file served does not parse as an image.
    #[error("{url}: the file served does not parse as an image: {detail}")]
    Unparsable {
        /// The URL asked.
        url: String,
        /// The parser's complaint.
        detail: String,
    },
    /// The cache folder cannot be written or read.
    #[error("the symbol cache {path}: {os_error}")]
    Cache {
        /// The path.
        path: PathBuf,
        /// The operating system's error.
        os_error: String,
    },
}

/// The key of a module file in the symbol-store layout: `libcoreclr.so/elf-buildid-<id>/
/// libcoreclr.so`, `coreclr.dll/<TIMESTAMP><size>/coreclr.dll`.
pub fn key(file_name: &str, identity: &ModuleIdentity) -> String {
    let f = file_name.to_ascii_lowercase();
    let mid = match identity {
        ModuleIdentity::BuildId(b) => {
            let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
            format!("elf-buildid-{hex}")
        }
        ModuleIdentity::Pe {
            timestamp,
            size_of_image,
        } => format!("{timestamp:08X}{size_of_image:x}"),
    };
    format!("{f}/{mid}/{f}")
}

/// A module file from the server (or its cache), its identity checked.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The file in the cache.
    pub path: PathBuf,
    /// The URL it came from.
    pub url: String,
    /// Whether it was already in the cache (checked again).
    pub cached: bool,
    /// Its image as loaded at the module's base (exports, load bias).
    pub image: ModuleImage,
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> SymbolError + '_ {
    move |e| SymbolError::Cache {
        path: path.to_path_buf(),
        os_error: e.to_string(),
    }
}

/// The file's identity equals `wanted`, and the file parses as the module's image.
fn check(
    bytes: &[u8],
    module: &ModuleInfo,
    wanted: &ModuleIdentity,
    url: &str,
) -> Result<ImageFormat, SymbolError> {
    match dumpreader::file_identity(bytes) {
        Some(found) if found == *wanted => {}
        Some(found) => {
            return Err(SymbolError::IdentityMismatch {
                url: url.to_owned(),
                wanted: wanted.to_string(),
                found: found.to_string(),
            })
        }
        None => {
            return Err(SymbolError::NoIdentity {
                url: url.to_owned(),
            })
        }
    }
    let is_pe = matches!(wanted, ModuleIdentity::Pe { .. });
    dumpreader::parse_image_file(bytes, module.base, is_pe, dumpreader::PeLayout::Mapped).map_err(
        |e| SymbolError::Unparsable {
            url: url.to_owned(),
            detail: e.to_string(),
        },
    )
}

impl SymbolServer {
    /// The URL of a key.
    pub fn url_of(&self, key: &str) -> String {
        format!("{}/{key}", self.url.trim_end_matches('/'))
    }

    /// The module's file: from the cache when there and of the module's identity, else
    /// downloaded, checked, and kept in the cache. A file whose identity differs is deleted
    /// and refused.
    pub fn fetch(&self, module: &ModuleInfo) -> Result<Fetched, SymbolError> {
        let file = module.name().to_owned();
        let wanted = module
            .identity
            .clone()
            .ok_or_else(|| SymbolError::NoKey { file: file.clone() })?;
        let key = key(&file, &wanted);
        let url = self.url_of(&key);
        let path = self.cache.join(&key);
        let done = |format, cached| Fetched {
            path: path.clone(),
            url: url.clone(),
            cached,
            image: ModuleImage {
                module_path: module.path.clone(),
                base: module.base,
                source: dumpreader::ImageSource::File(path.clone()),
                note: format!("from {url}: identity matches ({wanted})"),
                format,
            },
        };
        // The cache: a file kept under its key is checked again (a damaged or foreign file
        // is downloaded anew).
        if let Ok(bytes) = read_bounded(&path) {
            if let Ok(format) = check(&bytes, module, &wanted, &url) {
                return Ok(done(format, true));
            }
            let _ = std::fs::remove_file(&path);
        }
        let dir = path.parent().unwrap_or(&self.cache);
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        let tmp = dir.join(format!(".{file}.part.{}", std::process::id()));
        let out = Command::new(&self.curl)
            .args(["--fail", "--silent", "--show-error", "--location"])
            .args(["--connect-timeout", "30", "--max-time", "900"])
            .arg("--max-filesize")
            .arg(MAX_DOWNLOAD.to_string())
            .arg("--output")
            .arg(&tmp)
            .arg(&url)
            .output()
            .map_err(|e| SymbolError::NoCurl {
                curl: self.curl.display().to_string(),
                os_error: e.to_string(),
            })?;
        if !out.status.success() {
            let _ = std::fs::remove_file(&tmp);
            return Err(SymbolError::Download {
                url,
                detail: format!(
                    "curl {}: {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            });
        }
        let bytes = read_bounded(&tmp);
        let checked = bytes.and_then(|b| check(&b, module, &wanted, &url));
        match checked {
            Ok(format) => {
                std::fs::rename(&tmp, &path).map_err(io_err(&path))?;
                Ok(done(format, false))
            }
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    }
}

fn read_bounded(path: &Path) -> Result<Vec<u8>, SymbolError> {
    let len = std::fs::metadata(path).map_err(io_err(path))?.len();
    if len > MAX_DOWNLOAD {
        return Err(SymbolError::Cache {
            path: path.to_path_buf(),
            os_error: format!("{len} bytes, over the {MAX_DOWNLOAD}-byte limit"),
        });
    }
    std::fs::read(path).map_err(io_err(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys of dotnet/symstore's SSQP key conventions: ELF build id in lower-case hex,
    /// PE timestamp as 8 upper-case hex digits and SizeOfImage in as few lower-case digits,
    /// file names in lower case.
    #[test]
    fn keys_follow_the_symbol_store_conventions() {
        assert_eq!(
            key(
                "libcoreclr.so",
                &ModuleIdentity::BuildId(vec![0x49, 0x7b, 0x72, 0xf6, 0x0a])
            ),
            "libcoreclr.so/elf-buildid-497b72f60a/libcoreclr.so"
        );
        assert_eq!(
            key(
                "Foo.exe",
                &ModuleIdentity::Pe {
                    timestamp: 0x542d574e,
                    size_of_image: 0xc2000
                }
            ),
            "foo.exe/542D574Ec2000/foo.exe"
        );
        assert_eq!(
            key(
                "coreclr.dll",
                &ModuleIdentity::Pe {
                    timestamp: 0x0000abcd,
                    size_of_image: 0x1000
                }
            ),
            "coreclr.dll/0000ABCD1000/coreclr.dll"
        );
    }
}
