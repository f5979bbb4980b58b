// swift-tools-version: 6.0
import PackageDescription

// The benchmark suite is its own package so that nothing it needs ever becomes a dependency of
// ModelKit. It depends only on the library (by path) and the toolchain's Foundation.
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
            dependencies: [.product(name: "ModelKit", package: "ModelKit")],
            path: "Sources/ModelKitBenchmarks"
        )
    ],
    swiftLanguageModes: [.v6]
)
