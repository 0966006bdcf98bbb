"""Replication from RESO Web API feeds (OData 4): the sources, the client, the passes.

`propdata sources add|list|remove` keep the sources (`service.SourceService`, stored by
`repository.SourceRepository`); `propdata data replicate NAME` runs passes
(`service.Replicator`), reading pages with `client.FeedClient` and committing each through
`ingest.pipeline` with the source's watermark in the same transaction. The RESO mapping is
`ingest.readers.reso`, shared with the RESO CSV import. docs/replication.md is the guide.
"""
