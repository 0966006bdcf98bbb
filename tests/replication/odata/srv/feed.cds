using { reso } from '../db/schema';

@path: '/odata'
service Feed {
  entity Property as projection on reso.Property;
  entity EntityEvent as projection on reso.EntityEvent;
}
