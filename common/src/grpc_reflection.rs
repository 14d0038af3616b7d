//! Server reflection (`grpc.reflection.v1` and `v1alpha`) for the backend gRPC
//! servers, so that grpcurl, Postman or a dynamic client can list a server's
//! services and fetch their schemas: each server describes only the package
//! it serves, the standard health service and reflection itself.
//!
//! Reflection is served without a credential: it reveals the public API
//! schema (the `.proto` files of this repository) and nothing about tenants,
//! and every RPC it describes still requires its own credential and scope. It
//! is not exempt from load shedding: a refused listing is cheap to retry,
//! unlike a failed liveness probe.

use std::collections::{BTreeSet, HashMap};

use prost::Message;
use prost_types::{FileDescriptorProto, FileDescriptorSet};
use tonic_reflection::server::{Builder, v1, v1alpha};

pub use tonic_reflection::server::Error as ReflectionError;

/// The standard health service, described on every server.
const HEALTH_SERVICE: &str = "grpc.health.v1.Health";
/// Both reflection services, each answered on every server.
const REFLECTION_SERVICES: [&str; 2] = [
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
];

/// The v1 and v1alpha reflection services describing every service of
/// `package` in `descriptor_set` (an encoded `FileDescriptorSet`, such as
/// `chataigne_proto::FILE_DESCRIPTOR_SET`), plus health and reflection.
#[allow(clippy::type_complexity)]
pub fn services(
    descriptor_set: &[u8],
    package: &str,
) -> Result<
    (
        v1::ServerReflectionServer<impl v1::ServerReflection>,
        v1alpha::ServerReflectionServer<impl v1alpha::ServerReflection>,
    ),
    ReflectionError,
> {
    let (files, names) = package_files(descriptor_set, package)?;
    let builder = || {
        let mut builder = Builder::configure()
            .register_file_descriptor_set(files.clone())
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(
                tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
            )
            // Registered above, for both versions.
            .include_reflection_service(false);
        for name in names
            .iter()
            .map(String::as_str)
            .chain([HEALTH_SERVICE])
            .chain(REFLECTION_SERVICES)
        {
            builder = builder.with_service_name(name);
        }
        builder
    };
    Ok((builder().build_v1()?, builder().build_v1alpha()?))
}

/// The files of `package` and the files they import, with the full names of
/// the package's services.
fn package_files(
    descriptor_set: &[u8],
    package: &str,
) -> Result<(FileDescriptorSet, Vec<String>), ReflectionError> {
    let set = FileDescriptorSet::decode(descriptor_set)?;
    let by_name: HashMap<&str, &FileDescriptorProto> =
        set.file.iter().map(|file| (file.name(), file)).collect();
    let mut wanted: Vec<&str> = set
        .file
        .iter()
        .filter(|file| file.package() == package)
        .map(|file| file.name())
        .collect();
    let mut kept = BTreeSet::new();
    while let Some(name) = wanted.pop() {
        if let Some(file) = by_name.get(name)
            && kept.insert(name)
        {
            wanted.extend(file.dependency.iter().map(String::as_str));
        }
    }
    let services = set
        .file
        .iter()
        .filter(|file| file.package() == package)
        .flat_map(|file| file.service.iter())
        .map(|service| format!("{package}.{}", service.name()))
        .collect();
    let files = FileDescriptorSet {
        file: set
            .file
            .iter()
            .filter(|file| kept.contains(file.name()))
            .cloned()
            .collect(),
    };
    Ok((files, services))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, package: &str, services: &[&str], imports: &[&str]) -> FileDescriptorProto {
        FileDescriptorProto {
            name: Some(name.to_owned()),
            package: Some(package.to_owned()),
            dependency: imports.iter().map(|i| (*i).to_owned()).collect(),
            service: services
                .iter()
                .map(|s| prost_types::ServiceDescriptorProto {
                    name: Some((*s).to_owned()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn only_the_package_and_its_imports_are_described() {
        let set = FileDescriptorSet {
            file: vec![
                file("common.proto", "x.common", &[], &[]),
                file("a.proto", "x.a", &["One", "Two"], &["common.proto"]),
                file("b.proto", "x.b", &["Other"], &[]),
            ],
        };
        let (files, services) = package_files(&set.encode_to_vec(), "x.a").unwrap();
        let names: Vec<&str> = files.file.iter().map(|f| f.name()).collect();
        assert_eq!(names, ["common.proto", "a.proto"]);
        assert_eq!(services, ["x.a.One", "x.a.Two"]);
    }

    #[test]
    fn both_versions_build_from_a_real_descriptor_set() {
        let (files, services_of_package) =
            package_files(tonic_health::pb::FILE_DESCRIPTOR_SET, "grpc.health.v1").unwrap();
        assert_eq!(services_of_package, [HEALTH_SERVICE]);
        assert!(!files.file.is_empty());
        assert!(services(tonic_health::pb::FILE_DESCRIPTOR_SET, "grpc.health.v1").is_ok());
    }

    #[test]
    fn a_corrupt_descriptor_set_is_an_error() {
        assert!(services(b"\xff\xff", "x.a").is_err());
    }
}
