import Foundation
import ModelKit

// Following references on the server, written once for every backend: the engine behind a
// query's referenced records (conditions read through references) and behind a fetch with its
// references. Records are read level by level, one list request per collection per chunk of ids
// (`in_id` for Kinto), never one request per record, unless the backend cannot list.

/// Which references a walk follows from the records it starts from, and how far.
struct ReferenceWalk {
    /// How many hops at most; `nil`: until no new record turns up.
    var depth: Int?
    /// The fields whose pointers are followed (of every record, at every hop); `nil`: all.
    var fields: Set<String>?
    /// How many records the walk may hold at most, counting the records it starts from.
    var maximumRecords: Int
    /// What to throw beyond `maximumRecords`.
    var tooMany: ServiceError
}

/// The records that a walk reached, and the pointers to records the server does not have.
struct ReferencedRecords {
    var records: [RemoteRecord] = []
    /// Records looked for and not found: references to them read as none.
    var missing: Set<RecordID> = []
}

extension ModelService {
    /// The records that `start` references as `walk` says, hop after hop, by collection: each
    /// record once, cycles included, none of `start` again.
    ///
    /// - Complexity: O(*r*) in the records reached, plus one list request per collection per
    ///   level per 100 ids (and per page of them); one read per record when the backend cannot
    ///   list (``ServiceError/Code/notSupported``).
    func referencedRecords(of start: [RemoteRecord], walk: ReferenceWalk) async throws(ServiceError) -> ReferencedRecords {
        var result = ReferencedRecords()
        guard walk.depth != 0, !start.isEmpty else { return result }
        var known = Set(start.map(\.id))
        var level = start
        var hops = 0
        var canList = true
        while !level.isEmpty, walk.depth.map({ hops < $0 }) ?? true {
            hops += 1
            var wanted: [String: [String]] = [:]
            for record in level {
                let text = record.text
                text.forEachPointer(in: record.node, fields: walk.fields) { pointer in
                    guard let model = text.member(pointer, "model").flatMap(text.string),
                        let objectId = text.member(pointer, "objectId").flatMap(text.string),
                        known.insert(RecordID(collection: model, id: objectId)).inserted
                    else { return }
                    wanted[model, default: []].append(objectId)
                }
            }
            level = []
            for (collection, ids) in wanted.sorted(by: { $0.key < $1.key }) {
                // A pointer to an impossible collection, or to a type this app does not know as
                // a remote model, fails when it is decoded, with that reason: no request for it.
                // One to an impossible id names no record: it reads as none.
                guard RecordCodec.isValidId(collection), ModelRegistry.type(named: collection) is any RemoteModel.Type
                else { continue }
                var valid: [String] = []
                for id in ids {
                    if RecordCodec.isValidId(id) {
                        valid.append(id)
                    } else {
                        result.missing.insert(RecordID(collection: collection, id: id))
                    }
                }
                for offset in stride(from: 0, to: valid.count, by: 100) {
                    let chunk = Array(valid[offset..<min(offset + 100, valid.count)])
                    let found = try await existingRecords(
                        chunk, of: collection, maximumCandidates: walk.maximumRecords, tooMany: walk.tooMany,
                        canList: &canList)
                    if found.count < chunk.count {
                        let foundIds = Set(found.map(\.id.id))
                        for id in chunk where !foundIds.contains(id) {
                            result.missing.insert(RecordID(collection: collection, id: id))
                        }
                    }
                    level += found
                    result.records += found
                    guard start.count + result.records.count <= walk.maximumRecords else { throw walk.tooMany }
                }
            }
        }
        return result
    }

    /// The records of `collection` with these ids that the server has (the others are gone): one
    /// list request (and its pages), or, once the backend said it cannot list (`canList` false
    /// from then on), one read per id.
    ///
    /// - Throws: `tooMany` beyond `maximumCandidates`; ``ServiceError/Code/invalidResponse`` for a
    ///   record not asked for; the network and server errors.
    /// - Complexity: O(*r*) in the records' size, plus one request per page (or per id).
    func existingRecords(
        _ ids: [String], of collection: String, maximumCandidates: Int, tooMany: ServiceError, canList: inout Bool
    ) async throws(ServiceError) -> [RemoteRecord] {
        let asked = Set(ids)
        var found: [RemoteRecord] = []
        if canList {
            // Ordered by id: a server pages by the sort's values, and a record written between two
            // pages would move past the cursor of the default order (by version) and be missed.
            let request = RecordListRequest(
                collection: collection, conditions: [RecordCondition(.recordId, .in, ids.map(ModelValue.string))],
                order: [RecordSortKey(.recordId, ascending: true)])
            do throws(ServiceError) {
                found = try await collect(request, maximumCandidates: maximumCandidates, tooMany: tooMany)
            } catch let error where error.code == .notSupported {
                canList = false
            }
        }
        if !canList {
            for id in ids {
                do throws(ServiceError) {
                    found.append(try await read(RecordID(collection: collection, id: id)))
                } catch let error where error.code == .notFound {
                    continue
                }
            }
        }
        for record in found where record.id.collection != collection || !asked.contains(record.id.id) {
            throw ServiceError(
                .invalidResponse(
                    expected: "records of \(collection) among the \(ids.count) ids asked for", found: "\(record.id)"),
                record: record.id)
        }
        return found
    }

    /// Every record of `request`, page after page, without duplicates; `tooMany` beyond
    /// `maximumCandidates`.
    func collect(_ request: RecordListRequest, maximumCandidates: Int, tooMany: ServiceError) async throws(ServiceError)
        -> [RemoteRecord]
    {
        var records: [RemoteRecord] = []
        var seen = Set<String>()
        var cursor: RecordCursor?
        var emptyPages = 0
        repeat {
            let page = try await listRecords(request, after: cursor)
            for record in page.records where seen.insert(record.id.id).inserted {
                guard record.id.collection == request.collection else {
                    throw ServiceError(
                        .invalidResponse(
                            expected: "records of \(request.collection)", found: "a record of \(record.id.collection)"),
                        record: record.id)
                }
                records.append(record)
            }
            if let limit = request.limit, records.count >= limit {
                records.removeLast(records.count - limit)
                break
            }
            guard records.count <= maximumCandidates else { throw tooMany }
            // A server that keeps answering empty pages with a next one would never end.
            emptyPages = page.records.isEmpty ? emptyPages + 1 : 0
            guard emptyPages < 8 else {
                throw ServiceError(
                    .invalidResponse(expected: "records or the last page", found: "\(emptyPages) empty pages in a row"))
            }
            cursor = page.next
        } while cursor != nil
        return records
    }
}
