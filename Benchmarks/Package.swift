// swift-tools-version: 6.0
import PackageDescription

// The benchmark suite is its own package so that nothing it needs ever becomes a dependency of
// ModelKit. It depends on the library (by path), the toolchain's Foundation, and a C target of
// its own that reads the C heap's statistics for `graph-memory`. The `service-*` benchmarks also use
// ModelKitServices, against a Kinto server they start with Scripts/kinto-server. The `store-*`
// benchmarks time GRDB (SQLite, with the system's libsqlite3: `libsqlite3-dev` on Linux) as the peer
// of ModelStore; the library itself never depends on it.
//
//     swift run -c release --package-path Benchmarks ModelKitBenchmarks --help
let package = Package(
    name: "ModelKitBenchmarks",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [
        .package(name: "ModelKit", path: ".."),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        .executableTarget(
            name: "ModelKitBenchmarks",
            dependencies: [
                .product(name: "ModelKit", package: "ModelKit"), .product(name: "ModelKitServices", package: "ModelKit"), "MallocStats",
                "BlogFixture",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Sources/ModelKitBenchmarks"
        ),
        // One operation on the blog, for a profiler (see its main.swift).
        .executableTarget(
            name: "ModelKitProfile",
            dependencies: [.product(name: "ModelKit", package: "ModelKit"), "BlogFixture"],
            path: "Sources/ModelKitProfile"
        ),
        // The blog both executables build (its models, content and builder).
        .target(
            name: "BlogFixture",
            dependencies: [.product(name: "ModelKit", package: "ModelKit")],
            path: "Sources/BlogFixture"
        ),
        .target(name: "MallocStats", path: "Sources/MallocStats"),
    ],
    swiftLanguageModes: [.v6]
)
