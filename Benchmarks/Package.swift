// swift-tools-version: 6.0
import PackageDescription

// The benchmark suite is its own package so that nothing it needs ever becomes a dependency of
// ModelKit. It depends only on the library (by path), the toolchain's Foundation, and a C target of
// its own that reads the C heap's statistics for `graph-memory`. The `service-*` benchmarks also use
// ModelKitServices, against a Kinto server they start with Scripts/kinto-server.
//
//     swift run -c release --package-path Benchmarks ModelKitBenchmarks --help
let package = Package(
    name: "ModelKitBenchmarks",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [
        .package(name: "ModelKit", path: "..")
    ],
    targets: [
        .executableTarget(
            name: "ModelKitBenchmarks",
            dependencies: [
                .product(name: "ModelKit", package: "ModelKit"), .product(name: "ModelKitServices", package: "ModelKit"), "MallocStats",
            ],
            path: "Sources/ModelKitBenchmarks"
        ),
        .target(name: "MallocStats", path: "Sources/MallocStats"),
    ],
    swiftLanguageModes: [.v6]
)
