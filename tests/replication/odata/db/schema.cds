// A RESO Web API Property resource: the Data Dictionary's names for the fields the
// replication reads (test-only; served by @sap/cds from a CSV the tests write).
namespace reso;

entity Property {
  key ListingKey            : String(64);
      ModificationTimestamp : Timestamp;
      StandardStatus        : String(40);
      PropertyType          : String(40);
      PropertySubType       : String(40);
      OriginatingSystemName : String(40);
      UnparsedAddress       : String(200);
      StreetNumber          : String(20);
      StreetName            : String(80);
      StreetSuffix          : String(20);
      UnitNumber            : String(20);
      City                  : String(80);
      StateOrProvince       : String(2);
      PostalCode            : String(10);
      CountyOrParish        : String(80);
      ListPrice             : Decimal(14, 2);
      OriginalListPrice     : Decimal(14, 2);
      ClosePrice            : Decimal(14, 2);
      CloseDate             : Date;
      BedroomsTotal         : Integer;
      BathroomsTotalInteger : Integer;
      LivingArea            : Decimal(12, 2);
      LotSizeArea           : Decimal(12, 4);
      LotSizeUnits          : String(20);
      YearBuilt             : Integer;
      DaysOnMarket          : Integer;
      Latitude              : Double;
      Longitude             : Double;
      MlgCanView            : Boolean; // MLS Grid: false once a listing may no longer be shown
}

// RESO's EntityEvent resource (RCP-27): an append-only log naming the records that changed.
entity EntityEvent {
  key EntityEventSequence : Integer64;
      ResourceName        : String(40);
      ResourceRecordKey   : String(64);
}
