// swift-tools-version: 6.0
import PackageDescription

// The benchmark suite is its own package so that nothing it needs ever becomes a dependency of
// ModelKit. It depends only on the library (by path), the toolchain's Foundation, and a C target of
// its own that reads the C heap's statistics for `graph-memory`.
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
            dependencies: [.product(name: "ModelKit", package: "ModelKit"), "MallocStats"],
            path: "Sources/ModelKitBenchmarks"
        ),
        .target(name: "MallocStats", path: "Sources/MallocStats"),
    ],
    swiftLanguageModes: [.v6]
)
