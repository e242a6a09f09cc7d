import DBusValues
import SecretStore

/// A method call that passed its caller rule (``CallRouter/admit(_:)``), with the object it reaches
/// and its arguments decoded by type: what a method's handler (``MethodHandler``) gets.
struct AdmittedCall {
    /// The call as it arrived.
    let call: MethodCall
    /// The object it reaches.
    let target: AdmittedTarget

    /// The caller's unique bus name.
    var sender: String { call.sender }

    /// Lets the caller's next calls of this method be handled before this one is answered
    /// (``MethodCall/letSameMethodGoAhead``).
    var letSameMethodGoAhead: () -> Void { call.letSameMethodGoAhead }

    /// Argument `index` as a `T`; `InvalidArgs` when it is missing or of another type.
    func argument<T: DBusArgument>(_ index: Int, as type: T.Type = T.self) throws(SecretServiceError) -> T {
        guard call.arguments.indices.contains(index), let value = T(dbusValue: call.arguments[index]) else {
            throw .invalidArgs("argument \(index + 1) of \(call.method) must be \(T.self)")
        }
        return value
    }

    /// The collection called (its path or an alias's).
    func collection() throws(SecretServiceError) -> Store.CollectionRecord {
        guard case .collection(let collection) = target else { throw .noSuchObject("no collection \(call.path)") }
        return collection
    }

    /// The prompt called (one of the caller's).
    func promptID() throws(SecretServiceError) -> Int {
        guard case .prompt(let id) = target else { throw .noSuchObject("no prompt \(call.path)") }
        return id
    }

    /// The item called, with its collection.
    func item() throws(SecretServiceError) -> (Store.ItemRecord, Store.CollectionRecord) {
        guard case .item(let item, let collection) = target else { throw .noSuchObject("no item \(call.path)") }
        return (item, collection)
    }
}

/// What answers calls of one method: at once, or through a reply it may send later (after a
/// prompt, a key derivation, a git round). It is part of the method's declaration
/// (``BusInterface/Method``), so routing a call is looking the method up.
enum MethodHandler: Sendable {
    /// Answers at once with the reply's tuple of out arguments, or throws the error to send.
    case now(@Sendable (Provider, AdmittedCall) throws(SecretServiceError) -> DBusValue)
    /// Answers through `reply`, called once, now or later; a handler that throws (before it
    /// called `reply`) is answered with that error.
    case later(@Sendable (Provider, AdmittedCall, _ reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void) throws(SecretServiceError) -> Void)
}

/// The object whose properties are read, looked up once for the caller, and who reads.
struct PropertyRead {
    /// What the object is.
    enum Target {
        /// `/org/freedesktop/secrets`.
        case service
        /// The portal backend.
        case portal
        /// A collection.
        case collection(Store.CollectionRecord)
        /// An item the reader may see, and how much of it.
        case item(Store.ItemRecord, Store.CollectionRecord, ItemAccess)
    }

    /// The object.
    let target: Target
    /// The reader's unique bus name.
    let sender: String

    /// The collection read.
    func collection() throws(SecretServiceError) -> Store.CollectionRecord {
        guard case .collection(let collection) = target else { throw .noSuchObject("not a collection") }
        return collection
    }

    /// The item read, its collection, and how much of it the reader may see.
    func item() throws(SecretServiceError) -> (Store.ItemRecord, Store.CollectionRecord, ItemAccess) {
        guard case .item(let item, let collection, let access) = target else { throw .noSuchObject("not an item") }
        return (item, collection, access)
    }
}

/// A property write that passed its caller rule: the object, the value and who writes.
struct PropertyWrite {
    /// The object written.
    let target: AdmittedTarget
    /// The value, already checked to be of the property's type.
    let value: DBusValue
    /// The writer's unique bus name.
    let sender: String

    /// The value as a `T`.
    func value<T: DBusArgument>(as type: T.Type = T.self) throws(SecretServiceError) -> T {
        guard let decoded = T(dbusValue: value) else { throw .invalidArgs("the value must be \(T.self)") }
        return decoded
    }

    /// The collection written.
    func collection() throws(SecretServiceError) -> Store.CollectionRecord {
        guard case .collection(let collection) = target else { throw .noSuchObject("not a collection") }
        return collection
    }

    /// The item written, with its collection.
    func item() throws(SecretServiceError) -> (Store.ItemRecord, Store.CollectionRecord) {
        guard case .item(let item, let collection) = target else { throw .noSuchObject("not an item") }
        return (item, collection)
    }
}
